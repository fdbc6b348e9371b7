import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '@rudder/scripted-model';
import { answered, callerOf, started, startStack, type Stack } from './stack';
import { gateName, requestsAbout, testScript } from './scripts';

/**
 * SPEC "Editing a conversation", the fork, on the real stack with AUTH_TOKENS set: the fork's
 * history is the source's up to the turn (the model's next request holds it and nothing after),
 * its owner the forking subject, no grant copied, the source never written; neither shows the
 * other's later turns.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob,carol-token=carol' } });
});
afterAll(() => stack?.stop());

const key = (name: string) => `fork/${name}-${Math.random().toString(36).slice(2, 8)}`;
/** Every text of a request's messages: what the model was sent. */
const sent = (request: ModelRequest) => request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

describe('fork', () => {
  it("copies the source's history up to the turn: the fork's next request holds it and nothing after; neither reads the other's later turns; the source is not written", async () => {
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const carol = callerOf(stack.gatewayUrl, 'carol-token');
    const source = key('source');
    const into = key('into');
    const turns = [];
    for (const text of [`one ${source}`, `two ${source}`, `three ${source}`]) {
      await alice.client.chat(source, { text, id: text.split(' ')[0] });
      turns.push(await answered(alice.client, source, text.split(' ')[0]));
    }
    await alice.client.grant(source, 'carol', 'read');
    const before = await alice.client.status(source);
    const eventsBefore = (await alice.http.get(source, '/turns')).body;

    // carol may read the source, so she may fork it; the fork is hers.
    const forked = await carol.http.post(source, '/fork', { into, atTurn: turns[1].id, id: 'f1' });
    expect({ status: forked.status, body: forked.body }).toEqual({ status: 201, body: { key: into, from: source, atTurn: turns[1].id } });
    // Sent again (its id as the header), it answers the same and forks once.
    const again = await carol.http.post(source, '/fork', { into, atTurn: turns[1].id }, { 'idempotency-key': 'f1' });
    expect({ status: again.status, body: again.body }).toEqual({ status: 201, body: forked.body });
    expect((await carol.http.get(into)).status).toBe(200);
    // Grants are not copied: alice, the source's owner, may not read carol's fork.
    expect((await alice.http.get(into)).status).toBe(403);

    await carol.client.chat(into, { text: `in the fork ${into}`, id: 'c1' });
    await answered(carol.client, into, 'c1');
    const [request] = requestsAbout(stack.model.requests, `in the fork ${into}`);
    expect(sent(request)).toEqual(expect.arrayContaining([`one ${source}`, `answer to one ${source}`, `two ${source}`, `answer to two ${source}`]));
    expect(sent(request).filter((text) => text.includes('three'))).toEqual([]);

    // The source goes on: its next request has nothing of the fork, and the fork's nothing of it.
    await alice.client.chat(source, { text: `four ${source}`, id: 'four' });
    await answered(alice.client, source, 'four');
    const [sourceRequest] = requestsAbout(stack.model.requests, `four ${source}`);
    expect(sent(sourceRequest).filter((text) => text.includes('in the fork'))).toEqual([]);
    await carol.client.chat(into, { text: `again in the fork ${into}`, id: 'c2' });
    await answered(carol.client, into, 'c2');
    const [forkRequest] = requestsAbout(stack.model.requests, `again in the fork ${into}`);
    expect(sent(forkRequest).filter((text) => text.includes('three') || text.includes('four'))).toEqual([]);
    expect(sent(forkRequest)).toEqual(expect.arrayContaining([`two ${source}`, `in the fork ${into}`, `answer to in the fork ${into}`]));

    // Reads: the source's transcript and turns never show the fork's turns, the fork's never the source's later ones.
    const sourceTexts = (await alice.client.messages(source)).items.map((m) => m.text);
    expect(sourceTexts.filter((t) => t.includes('in the fork'))).toEqual([]);
    const forkTexts = (await carol.client.messages(into)).items.map((m) => m.text);
    expect(forkTexts.filter((t) => t.includes('three') || t.includes('four'))).toEqual([]);
    expect(forkTexts).toEqual(expect.arrayContaining([`in the fork ${into}`, `again in the fork ${into}`]));
    const forkStatus = await carol.client.status(into);
    expect(forkStatus.lastInputId).toBe('c2');

    // The fork wrote nothing to the source: its turns and last input are as alice's own inputs left them.
    const after = await alice.client.status(source);
    expect(after.lastInputId).toBe('four');
    expect(before.lastInputId).toBe('three');
    const turnsAfter = (await alice.http.get(source, '/turns')).body;
    expect(JSON.stringify(turnsAfter)).not.toContain('in the fork');
    expect(JSON.stringify(eventsBefore)).not.toContain('in the fork');
  });

  it('needs read on the source (403 / 404 as reads), a new key (409), a turn that ended (404 unknown, default the latest); bad bodies 400 with nothing produced', async () => {
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    const source = key('checks');
    await alice.client.chat(source, { text: `only ${source}`, id: 'a' });
    const only = await answered(alice.client, source, 'a');

    const intoBob = key('bob');
    const denied = await bob.http.post(source, '/fork', { into: intoBob, id: 'b1' });
    expect([denied.status, denied.body.error?.code]).toEqual([403, 'forbidden']);
    expect((await bob.http.post(key('nothing'), '/fork', { into: intoBob, id: 'b2' })).status).toBe(404);
    // Nothing was made: the key bob named is still no conversation.
    expect((await bob.http.get(intoBob)).status).toBe(404);

    // into a conversation that exists (the source itself, or a fork made before): 409.
    const self = await alice.http.post(source, '/fork', { into: source, id: 'a1' });
    expect([self.status, self.body.error?.code]).toEqual([409, 'conflict']);
    const into = key('default');
    expect(await alice.client.fork(source, { into })).toEqual({ key: into, from: source, atTurn: only.id });
    expect((await alice.http.post(source, '/fork', { into, id: 'a2' })).status).toBe(409);
    // An unknown turn: 404, and the key is still free.
    const unknownInto = key('unknown');
    expect((await alice.http.post(source, '/fork', { into: unknownInto, atTurn: 'no-such-turn', id: 'a3' })).status).toBe(404);
    expect((await alice.http.get(unknownInto)).status).toBe(404);

    for (const body of [{}, { into: '' }, { into: 7 }, { into: 'x'.repeat(201) }, { into: 'ok', atTurn: '' }, { into: 'ok', extra: true }, { atTurn: only.id }]) {
      const answer = await alice.http.post(source, '/fork', body);
      expect({ body, status: answer.status, code: answer.body.error?.code }).toEqual({ body, status: 400, code: 'bad_request' });
    }
    expect((await alice.http.get('ok')).status).toBe(404);
  });

  it('a turn still running is 409', async () => {
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const source = key('running');
    const gate = gateName('fork-running');
    expect((await alice.http.post(source, '/chat', { text: `wait 1 gate:${gate}`, id: 'p' })).status).toBe(202);
    const turn = await started(alice.client, source, 'p');
    await stack.model.gate(gate).reached();
    const busy = await alice.http.post(source, '/fork', { into: key('busy'), atTurn: turn.id, id: 'r1' });
    expect([busy.status, busy.body.error?.code]).toEqual([409, 'conflict']);
    stack.model.gate(gate).open();
    await answered(alice.client, source, 'p');
  });
});
