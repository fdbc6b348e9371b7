import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastUserText, userTexts, type ModelRequest } from '@rudder/scripted-model';
import { readEvents } from './sse';
import { answered, WAIT, heldAt, holding, startStack, type Stack } from './stack';
import { gateName, requestsAbout, requestsWith, testScript } from './scripts';

/** SPEC "Queue controls", bullet by bullet, on the real stack. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const key = (name: string) => `queue/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** Never answered: no turn has it as prompt or took it, even after the conversation went quiet. */
async function neverAnswered(conversation: string, input: string) {
  await vi.waitFor(async () => {
    const body = await stack.client.status(conversation);
    expect(body).toMatchObject({ running: null, queue: [] });
  }, WAIT);
  expect((await stack.http.get(conversation, `/turns?input=${input}`)).status).toBe(404);
}

describe('pending inputs', () => {
  it("a chat's 202 gives its place: how many inputs are ahead of it (the running turn, the follow-ups waiting)", async () => {
    const { client } = stack;
    const conversation = key('position');
    const held = await holding(stack, conversation);
    const second = await client.chat(conversation, { text: 'second', id: 'c2' });
    const third = await client.chat(conversation, { text: 'third', id: 'c3' });
    expect([second.position, third.position]).toEqual([1, 2]);
    // Sent again while it waits, a chat is told where it is now.
    expect(await client.chat(conversation, { text: 'third', id: 'c3' })).toEqual({ id: 'c3', turn: null, position: 2 });
    await held.open();
    await answered(client, conversation, 'c3');
    expect(await client.chat(conversation, { text: 'fourth', id: 'c4' })).toEqual({ id: 'c4', turn: null, position: 0 });
  });

  it('status lists every pending input in order — steering for the running turn, queue behind it — and the stream reports them', async () => {
    const { client, http } = stack;
    const conversation = key('pending');
    const stream = readEvents(await http.events(conversation), (m) => m.event === 'input.retracted');
    const held = await holding(stack, conversation);
    await client.chat(conversation, { text: 'follow-up one', id: 'c1' });
    await client.steer(conversation, { text: 'a steer', id: 's1' });
    await client.chat(conversation, { text: 'follow-up two', id: 'c2' });
    const status = await vi.waitFor(async () => {
      const body = await client.status(conversation);
      expect([body.queue.length, body.steering.length]).toEqual([2, 1]);
      return body;
    }, WAIT);
    expect(status.steering).toEqual([{ id: 's1', text: 'a steer', revision: 0 }]);
    expect(status.queue).toEqual([
      { id: 'c1', kind: 'chat', text: 'follow-up one', revision: 0 },
      { id: 'c2', kind: 'chat', text: 'follow-up two', revision: 0 },
    ]);
    await client.retract(conversation, 'c2');
    const types = (await stream).map((m) => m.event);
    expect(types).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'input.accepted', 'input.accepted', 'steer.accepted', 'input.accepted', 'input.retracted']);
    held.open();
  });
});

describe('retract', () => {
  it('takes back a pending input and answers its text; it is never answered', async () => {
    const { client, http, model } = stack;
    const conversation = key('retract');
    const held = await holding(stack, conversation);
    await client.chat(conversation, { text: 'never mind this', id: 'c' });
    const retracted = await http.delete(conversation, '/inputs/c');
    expect(retracted.status).toBe(200);
    expect(retracted.body).toEqual({ id: 'c', text: 'never mind this' });
    held.open();
    await answered(client, conversation, 'p');
    await neverAnswered(conversation, 'c');
    expect(requestsWith(model.requests, 'never mind this')).toHaveLength(0);
    expect((await client.messages(conversation)).items.map((m) => m.text)).toEqual([held.text, `answer to ${held.text}`]);
  });

  it('?latest=chat and ?latest=steer take back the most recent pending one of that queue', async () => {
    const { client } = stack;
    const conversation = key('latest');
    const held = await holding(stack, conversation);
    await client.chat(conversation, { text: 'older', id: 'c1' });
    await client.chat(conversation, { text: 'newer', id: 'c2' });
    await client.steer(conversation, { text: 'steer me', id: 's' });
    expect(await client.retract(conversation, { latest: 'chat' })).toEqual({ id: 'c2', text: 'newer' });
    expect(await client.retract(conversation, { latest: 'steer' })).toEqual({ id: 's', text: 'steer me' });
    held.open();
    const first = await answered(client, conversation, 'p');
    expect(first.steered).toEqual([]);
    await answered(client, conversation, 'c1');
    await neverAnswered(conversation, 'c2');
    await neverAnswered(conversation, 's');
  });

  it('refuses with 409 a running turn\'s prompt, and 404 for an unknown input', async () => {
    const { client, http } = stack;
    const conversation = key('delivered');
    const held = await holding(stack, conversation);
    expect((await http.delete(conversation, '/inputs/p')).status).toBe(409);
    expect((await http.delete(conversation, '/inputs/no-such-input')).status).toBe(404);
    held.open();
    expect((await answered(client, conversation, 'p')).status).toBe('completed');
  });

  it('refuses with 409 a steer the running turn has taken, and the turn keeps it', async () => {
    const { client, http, model } = stack;
    const conversation = key('taken');
    const first = gateName('taken-first');
    const second = gateName('taken-second');
    const turn = await heldAt(stack, first, conversation, 'p', `wait 1 gate:${first}`);
    expect(await client.steer(conversation, { text: `then hold gate:${second}`, id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    model.gate(first).open();
    // Held in the request that has it: the step took it.
    await model.gate(second).reached();
    const refused = await http.delete(conversation, '/inputs/s');
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe('conflict');
    model.gate(second).open();
    const ended = await answered(client, conversation, 'p');
    expect(ended.steered).toEqual([{ id: 's', text: `then hold gate:${second}` }]);
  });
});

describe('promote', () => {
  it('turns a pending follow-up into a steer of the running turn, taken at the next step without cancelling the request in flight', async () => {
    const { client, http, model } = stack;
    const conversation = key('promote');
    const held = await holding(stack, conversation);
    await client.chat(conversation, { text: 'see this now', id: 'f' });
    const promoted = await http.post(conversation, '/inputs/f/promote');
    expect(promoted.status).toBe(200);
    expect(promoted.body).toEqual({ id: 'f', turn: held.turn.id, landed: true });
    held.open();
    const ended = await answered(client, conversation, 'p');
    expect(ended.steered).toEqual([{ id: 'f', text: 'see this now' }]);
    expect(ended.content).toBe(`answer to ${held.text}\n\nanswer to see this now`);
    // The request in flight was not asked again: the promoted message came in the next one.
    expect(requestsAbout(model.requests, held.text)).toHaveLength(1);
    expect(requestsAbout(model.requests, 'see this now')).toHaveLength(1);
    expect((await client.turnOf(conversation, 'f')).id).toBe(held.turn.id);
  });

  it('refuses with 409 what is not a pending follow-up any more', async () => {
    const { http } = stack;
    const conversation = key('promote-late');
    const held = await holding(stack, conversation);
    expect((await http.post(conversation, '/inputs/p/promote')).status).toBe(409);
    expect((await http.post(conversation, '/inputs/unknown/promote')).status).toBe(404);
    held.open();
  });
});

describe('edit', () => {
  it("gives a follow-up queued behind a running turn new text in its place, its revision one more; the model's request for its turn carries only the new text", async () => {
    const { client, http, model } = stack;
    const conversation = key('edit-follow-up');
    const held = await holding(stack, conversation);
    await client.chat(conversation, { text: 'book the day train', id: 'c1' });
    await client.chat(conversation, { text: 'and a hotel', id: 'c2' });
    const edited = await http.patch(conversation, '/inputs/c1', { text: 'book the night train', id: 'e1', ifRevision: 0 });
    expect({ status: edited.status, body: edited.body }).toEqual({ status: 200, body: { id: 'c1', kind: 'chat', text: 'book the night train', revision: 1 } });
    expect(Number(edited.headers.get('rudder-position'))).toBeGreaterThan(0);
    // The same edit again answers the same; an edit of another revision is refused, saying which it is.
    expect((await http.patch(conversation, '/inputs/c1', { text: 'book the night train' }, { 'idempotency-key': 'e1' })).body).toEqual(edited.body);
    const stale = await http.patch(conversation, '/inputs/c1', { text: 'book a plane', id: 'e2', ifRevision: 0 });
    expect({ status: stale.status, code: stale.body.error?.code, details: stale.body.error?.details }).toEqual({ status: 412, code: 'precondition_failed', details: { id: 'c1', revision: 1 } });
    expect((await client.status(conversation)).queue).toEqual([
      { id: 'c1', kind: 'chat', text: 'book the night train', revision: 1 },
      { id: 'c2', kind: 'chat', text: 'and a hotel', revision: 0 },
    ]);
    held.open();
    const turn = await answered(client, conversation, 'c1');
    expect(turn.prompt).toEqual({ id: 'c1', text: 'book the night train' });
    expect(requestsAbout(model.requests, 'book the night train')).toHaveLength(1);
    expect(requestsWith(model.requests, 'book the day train')).toHaveLength(0);
    await answered(client, conversation, 'c2');
    const said = (await client.messages(conversation)).items.filter((m) => m.role === 'user').map((m) => [m.id, m.text]);
    expect(said).toEqual([['p', held.text], ['c1', 'book the night train'], ['c2', 'and a hotel']]);
    // Delivered: 409, saying so; unknown: 404.
    const late = await http.patch(conversation, '/inputs/c1', { text: 'too late', id: 'e3' });
    expect({ status: late.status, code: late.body.error?.code, state: late.body.error?.details?.state }).toEqual({ status: 409, code: 'conflict', state: 'delivered' });
    expect((await http.patch(conversation, '/inputs/no-such-input', { text: 'x', id: 'e4' })).status).toBe(404);
  });

  it('gives a steer not taken yet new text: the next request carries the new text, once, and never the old', async () => {
    const { client, http, model } = stack;
    const conversation = key('edit-steer');
    const first = gateName('edit-first');
    const turn = await heldAt(stack, first, conversation, 'p', `wait 1 gate:${first}`);
    expect(await client.steer(conversation, { text: 'answer in Celsius', id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    expect(await client.edit(conversation, 's', 'answer in Kelvin')).toEqual({ id: 's', kind: 'steer', text: 'answer in Kelvin', revision: 1 });
    expect((await client.status(conversation)).steering).toEqual([{ id: 's', text: 'answer in Kelvin', revision: 1 }]);
    // A steer is one message: `messages` is not its shape.
    const shape = await http.patch(conversation, '/inputs/s', { messages: ['a', 'b'], id: 'e-shape' });
    expect({ status: shape.status, code: shape.body.error?.code }).toEqual({ status: 409, code: 'conflict' });
    model.gate(first).open();
    const ended = await answered(client, conversation, 'p');
    expect(ended.steered).toEqual([{ id: 's', text: 'answer in Kelvin' }]);
    const taking = requestsWith(model.requests, 'answer in Kelvin');
    expect(taking.length).toBeGreaterThan(0);
    expect(userTexts(taking[0]).filter((text) => text === 'answer in Kelvin')).toHaveLength(1);
    expect(requestsWith(model.requests, 'answer in Celsius')).toHaveLength(0);
    // Taken: no longer pending.
    expect((await http.patch(conversation, '/inputs/s', { text: 'answer in Fahrenheit', id: 'e-late' })).status).toBe(409);
  });
});

describe('move', () => {
  it("puts a follow-up queued behind a running turn before another, or at the end; the turns start in the new order, and each model request reads them so", async () => {
    const { client, http, model } = stack;
    const conversation = key('move');
    const held = await holding(stack, conversation);
    for (const [id, text] of [['c1', 'fetch the list'], ['c2', 'migrate the fetchers'], ['c3', 'check the archived ones']]) await client.chat(conversation, { text, id });
    await client.steer(conversation, { text: 'keep it short', id: 's' });
    const first = await http.post(conversation, '/inputs/c3/move', { before: 'c1', id: 'm1' });
    expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { id: 'c3', before: 'c1', position: 0 } });
    expect(Number(first.headers.get('rudder-position'))).toBeGreaterThan(0);
    // The same move again answers the same; the client's move to the end.
    expect((await http.post(conversation, '/inputs/c3/move', { before: 'c1' }, { 'idempotency-key': 'm1' })).body).toEqual(first.body);
    expect(await client.move(conversation, 'c1', null)).toEqual({ id: 'c1', before: null, position: 2 });
    expect((await client.status(conversation)).queue.map((q) => q.id)).toEqual(['c3', 'c2', 'c1']);
    // A steer waiting for the running turn is no follow-up: 409; unknown: 404; a before not in the queue: 409.
    const steer = await http.post(conversation, '/inputs/s/move', { before: null, id: 'm-steer' });
    expect({ status: steer.status, code: steer.body.error?.code, kind: steer.body.error?.details?.kind }).toEqual({ status: 409, code: 'conflict', kind: 'steer' });
    expect((await http.post(conversation, '/inputs/no-such-input/move', { before: null, id: 'm-unknown' })).status).toBe(404);
    const before = await http.post(conversation, '/inputs/c2/move', { before: 'p', id: 'm-before' });
    expect({ status: before.status, code: before.body.error?.code, details: before.body.error?.details }).toEqual({ status: 409, code: 'conflict', details: { id: 'c2', before: 'p' } });
    held.open();
    await answered(client, conversation, 'c1');
    const prompts = model.requests.map(lastUserText).filter((text) => ['fetch the list', 'migrate the fetchers', 'check the archived ones'].includes(text ?? ''));
    expect([...new Set(prompts)]).toEqual(['check the archived ones', 'migrate the fetchers', 'fetch the list']);
    const said = (await client.messages(conversation)).items.filter((m) => m.role === 'user' && !m.steered).map((m) => m.id);
    expect(said).toEqual(['p', 'c3', 'c2', 'c1']);
    // Delivered: 409, saying so.
    const late = await http.post(conversation, '/inputs/c1/move', { before: null, id: 'm-late' });
    expect({ status: late.status, code: late.body.error?.code, state: late.body.error?.details?.state }).toEqual({ status: 409, code: 'conflict', state: 'delivered' });
  });
});

describe('collapse (queue: latest, merge)', () => {
  it('latest: 50 concurrent follow-ups while a turn runs the whole time leave one waiting, then exactly one turn; the other 49 are answered collapsed into it, once each', async () => {
    const { client, http, model } = stack;
    const conversation = key('latest');
    const held = await holding(stack, conversation);
    const stream = readEvents(await http.events(conversation, { 'last-event-id': '0' }), (_m, all) => all.filter((m) => m.event === 'inputs.collapsed').flatMap((m) => (m.data as { data: { from: string[] } }).data.from).length >= 49);
    // Open development mode: no limit of inputs per second a subject (else 50 at once would pass the default 50/s with its burst).
    const ids = Array.from({ length: 50 }, (_, i) => `l${i}`);
    await Promise.all(ids.map((id) => client.chat(conversation, { text: `latest ${id}`, id, queue: 'latest' })));
    const status = await client.status(conversation);
    expect(status.queue).toHaveLength(1);
    const survivor = status.queue[0].id;
    const collapsed = (await stream).filter((m) => m.event === 'inputs.collapsed').map((m) => (m.data as { data: { into: string; from: string[]; policy: string } }).data);
    const from = collapsed.flatMap((c) => c.from);
    expect(new Set(from).size).toBe(49);
    expect(from.sort()).toEqual(ids.filter((id) => id !== survivor).sort());
    expect(collapsed.every((c) => c.policy === 'latest')).toBe(true);
    held.open();
    const turn = await answered(client, conversation, survivor);
    // Exactly one turn after the held one: it read only the survivor; each collapsed input is answered by it.
    expect(requestsWith(model.requests, `latest ${survivor}`).length).toBeGreaterThan(0);
    for (const id of ids.filter((i) => i !== survivor)) expect(requestsWith(model.requests, `latest ${id}`)).toHaveLength(0);
    for (const id of ['l0', 'l17', 'l49'].filter((i) => i !== survivor)) expect((await client.turnOf(conversation, id)).id).toBe(turn.id);
    const prompts = (await client.messages(conversation)).items.filter((m) => m.role === 'user').map((m) => m.id);
    expect(prompts).toEqual(['p', survivor]);
    // A collapsed input is no longer pending: 409 saying so.
    const late = await http.delete(conversation, `/inputs/${ids.find((i) => i !== survivor)}`);
    expect({ status: late.status, state: late.body.error?.details?.state }).toEqual({ status: 409, state: 'collapsed' });
  });

  it('merge: the waiting follow-ups become one turn whose prompt is all of them, in order, as a chat of several messages', async () => {
    const { client, model } = stack;
    const conversation = key('merge');
    const held = await holding(stack, conversation);
    for (const [id, text] of [['m1', 'pack the tent'], ['m2', 'book the ferry'], ['m3', 'find a campsite']]) {
      await client.chat(conversation, { text, id, queue: 'merge' });
    }
    expect((await client.status(conversation)).queue).toEqual([{ id: 'm1', kind: 'chat', text: 'pack the tent\n\nbook the ferry\n\nfind a campsite', revision: 0 }]);
    held.open();
    const turn = await answered(client, conversation, 'm1');
    const request = requestsWith(model.requests, 'find a campsite')[0];
    expect(userTexts(request).slice(-3)).toEqual(['pack the tent', 'book the ferry', 'find a campsite']);
    expect(requestsWith(model.requests, 'book the ferry').every((r) => userTexts(r).includes('pack the tent'))).toBe(true);
    expect((await client.turnOf(conversation, 'm3')).id).toBe(turn.id);
    expect((await client.turnOf(conversation, 'm2')).id).toBe(turn.id);
  });
});

describe('stop', () => {
  it('answers turn: null when no turn runs, and stops nothing', async () => {
    const { client, http } = stack;
    const conversation = key('stop-idle');
    await client.chat(conversation, { text: 'done already', id: 'p' });
    await answered(client, conversation, 'p');
    const stop = await http.post(conversation, '/stop', {});
    expect({ status: stop.status, body: stop.body }).toEqual({ status: 202, body: { turn: null } });
    await client.chat(conversation, { text: 'still answered', id: 'c' });
    expect(await answered(client, conversation, 'c')).toMatchObject({ status: 'completed', content: 'answer to still answered' });
  });

  it('a stop naming a turn that is no longer running stops nothing; naming the running one stops it', async () => {
    const { client, http } = stack;
    const conversation = key('stop-turn');
    await client.chat(conversation, { text: 'first', id: 'f1' });
    const first = await answered(client, conversation, 'f1');
    const { turn: second } = await holding(stack, conversation, 'f2');
    const stale = await http.post(conversation, '/stop', { turn: first.id });
    expect({ status: stale.status, body: stale.body }).toEqual({ status: 202, body: { turn: null } });
    expect((await client.status(conversation)).running?.turn).toBe(second.id);
    const meant = await client.stop(conversation, { turn: second.id });
    expect(meant).toEqual({ turn: second.id });
    expect(await answered(client, conversation, 'f2')).toMatchObject({ status: 'stopped' });
  });

  it('a stop while the model is midway through its reply ends the turn stopped; the words it had streamed are not stored as its answer', async () => {
    const { client, http, model } = stack;
    const conversation = key('stop-midway');
    const gate = gateName('midway');
    const text = `tell me a long story mid-gate:${gate}`;
    // The reply is held after its first word: the worker has read part of a reply, not all of it.
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    expect(await client.stop(conversation, { turn: turn.id })).toEqual({ turn: turn.id });
    expect(await answered(client, conversation, 'p')).toMatchObject({ id: turn.id, status: 'stopped', content: '' });
    const events = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    expect(events.filter((m) => m.event === 'model.replied')).toEqual([]);
    await model.gate(gate).open(); // nothing waits there any more
    await client.chat(conversation, { text: 'and now?', id: 'n' });
    expect(await answered(client, conversation, 'n')).toMatchObject({ status: 'completed', content: 'answer to and now?' });
  });
});

describe('onBusy', () => {
  it('reject answers 409 while a turn runs, and nothing is enqueued', async () => {
    const { client, http } = stack;
    const conversation = key('reject');
    const held = await holding(stack, conversation);
    const refused = await http.post(conversation, '/chat', { text: 'not now', id: 'x', onBusy: 'reject' });
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe('conflict');
    held.open();
    await answered(client, conversation, 'p');
    await neverAnswered(conversation, 'x');
  });

  it('interrupt while the turn has a step ahead: it ends superseded at that step, keeping what it did, then the new input runs', async () => {
    const { client, http, model } = stack;
    const conversation = key('interrupt');
    const gate = gateName('interrupt');
    const text = `wait 1 gate:${gate}`;
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    await client.chat(conversation, { text: 'queued before', id: 'q' });
    await client.chat(conversation, { text: 'do this instead', id: 'i', onBusy: 'interrupt' });
    model.gate(gate).open();
    const superseded = await answered(client, conversation, 'p');
    expect(superseded).toMatchObject({ id: turn.id, status: 'superseded', content: `waiting for ${text}` });
    const next = await answered(client, conversation, 'i');
    expect(Date.parse(next.startedAt)).toBeGreaterThanOrEqual(Date.parse(superseded.endedAt!));
    const queued = await answered(client, conversation, 'q');
    expect(Date.parse(queued.startedAt)).toBeGreaterThanOrEqual(Date.parse(next.endedAt!));
    // What the superseded turn answered stays in the history (later turns see a turn as its
    // prompt, steers and answers, not its tool calls).
    const request = requestsAbout(model.requests, 'do this instead')[0];
    expect(request.body.messages.slice(1)).toEqual([
      { role: 'user', content: text },
      { role: 'assistant', content: `waiting for ${text}` },
      { role: 'user', content: 'do this instead' },
    ]);
    // Its tool, started after the interrupt, saw windDown (SPEC "Winding down") and returned at once; the turn ended at the step after it.
    const events = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    expect(events.filter((m) => m.event === 'tool.ended').map((m) => (m.data as { data: { result: string } }).data.result)).toEqual([
      expect.stringMatching(/^waited [01] ms of 1, then wound down$/),
    ]);
    expect(superseded.woundDown).toBe(true);
    // It was not asked again after its tool's result: it ended at that step.
    expect(requestsWith(model.requests, text).filter((r) => lastUserTextIs(r, text))).toHaveLength(1);
  });

  it('rollback stops the running turn and drops its partial work from the next model request', async () => {
    const { client, model } = stack;
    const conversation = key('rollback');
    const gate = gateName('rollback');
    await client.chat(conversation, { text: `wait 1 gate-after-tool:${gate}`, id: 'p' });
    // Held after its tool result: the turn has stored a reply with a tool call and its result.
    await model.gate(gate).reached();
    await client.chat(conversation, { text: 'start over', id: 'r', onBusy: 'rollback' });
    const stopped = await answered(client, conversation, 'p');
    expect(stopped.status).toBe('stopped');
    await answered(client, conversation, 'r');
    const request = requestsAbout(model.requests, 'start over')[0];
    expect(request.body.messages.slice(1)).toEqual([{ role: 'user', content: 'start over' }]);
  });
});

describe('preconditions, stop with discardPending, several messages', () => {
  it('ifLastInputId: 412 when the last accepted input is another one', async () => {
    const { client, http } = stack;
    const conversation = key('precondition');
    await client.chat(conversation, { text: 'one', id: 'a' });
    await client.chat(conversation, { text: 'two', id: 'b' });
    const stale = await http.post(conversation, '/chat', { text: 'stale', id: 'c', ifLastInputId: 'a' });
    expect(stale.status).toBe(412);
    expect((await http.post(conversation, '/steer', { text: 'stale steer', id: 'd', ifLastInputId: 'a' })).status).toBe(412);
    expect((await http.post(conversation, '/chat', { text: 'fresh', id: 'e', ifLastInputId: 'b' })).status).toBe(202);
    await answered(client, conversation, 'e');
    await neverAnswered(conversation, 'c');
    await neverAnswered(conversation, 'd');
  });

  it('stop with discardPending discards every pending input and reports each; none is answered', async () => {
    const { client, http } = stack;
    const conversation = key('discard');
    await holding(stack, conversation);
    await client.chat(conversation, { text: 'pending one', id: 'c1' });
    await client.steer(conversation, { text: 'pending steer', id: 's1' });
    const stream = readEvents(await http.events(conversation, { 'last-event-id': '0' }), (_, all) => all.filter((m) => m.event === 'input.discarded').length === 2);
    expect((await http.post(conversation, '/stop', { discardPending: true })).status).toBe(202);
    const discarded = (await stream).filter((m) => m.event === 'input.discarded').map((m) => (m.data as { data: { input: { id: string } } }).data.input.id);
    expect(discarded.sort()).toEqual(['c1', 's1']);
    expect((await answered(client, conversation, 'p')).status).toBe('stopped');
    await neverAnswered(conversation, 'c1');
    await neverAnswered(conversation, 's1');
  });

  it('a chat of several messages stores them as separate user messages answered by one reply', async () => {
    const { client, model } = stack;
    const conversation = key('several');
    await client.chat(conversation, { messages: ['first part', 'second part'], id: 'm' });
    const turn = await answered(client, conversation, 'm');
    expect(turn.content).toBe('answer to second part');
    const asked = requestsAbout(model.requests, 'second part');
    expect(asked).toHaveLength(1);
    expect(asked[0].body.messages.slice(1)).toEqual([
      { role: 'user', content: 'first part' },
      { role: 'user', content: 'second part' },
    ]);
    const rows = (await client.messages(conversation)).items.filter((m) => m.role === 'user');
    expect(rows.map((r) => r.text)).toEqual(['first part', 'second part']);
  });
});

describe('bounds (defaults: 4 steers, 4 follow-ups, 8,000 characters)', () => {
  it('a fifth pending follow-up answers 429 with the counts and a Retry-After; nothing accepted is lost', async () => {
    const { client, http } = stack;
    const conversation = key('bound-chats');
    const held = await holding(stack, conversation);
    for (const n of [1, 2, 3, 4]) expect((await http.post(conversation, '/chat', { text: `f${n}`, id: `f${n}` })).status).toBe(202);
    const full = await http.post(conversation, '/chat', { text: 'f5', id: 'f5' });
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.body.error).toMatchObject({ code: 'queue_full', message: expect.stringContaining('4 queued') });
    held.open();
    for (const n of [1, 2, 3, 4]) expect((await answered(client, conversation, `f${n}`)).status).toBe('completed');
    await neverAnswered(conversation, 'f5');
  });

  it('a fifth waiting steer answers 429; nothing accepted is lost, and the turn takes the four', async () => {
    const { client, http } = stack;
    const conversation = key('bound-steers');
    const held = await holding(stack, conversation);
    for (const n of [1, 2, 3, 4]) expect((await client.steer(conversation, { text: `s${n}`, id: `s${n}` })).landed).toBe(true);
    const full = await http.post(conversation, '/steer', { text: 's5', id: 's5' });
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.body.error).toMatchObject({ code: 'queue_full', message: expect.stringContaining('steering queue is full (4 steering') });
    held.open();
    const ended = await answered(client, conversation, 'p');
    expect(ended.steered.map((s) => s.id)).toEqual(['s1', 's2', 's3', 's4']);
    await neverAnswered(conversation, 's5');
  });

  it('a chat or a steer past the characters bound answers 429, counting every pending text together', async () => {
    const { client, http } = stack;
    const conversation = key('bound-chars');
    const held = await holding(stack, conversation);
    expect((await http.post(conversation, '/chat', { text: 'x'.repeat(4000), id: 'c1' })).status).toBe(202);
    expect((await client.steer(conversation, { text: 'y'.repeat(3990), id: 's1' })).landed).toBe(true);
    const chat = await http.post(conversation, '/chat', { text: 'one more chat', id: 'c2' });
    expect(chat.status).toBe(429);
    expect(chat.body.error).toMatchObject({ code: 'queue_full', message: expect.stringContaining('too much text is waiting') });
    const steer = await http.post(conversation, '/steer', { text: 'one more steer', id: 's2' });
    expect(steer.status).toBe(429);
    expect(steer.body.error).toMatchObject({ code: 'queue_full', message: expect.stringContaining('at most 8000 characters') });
    expect(steer.headers.get('retry-after')).toMatch(/^\d+$/);
    held.open();
    expect((await answered(client, conversation, 'p')).steered.map((s) => s.id)).toEqual(['s1']);
    await answered(client, conversation, 'c1');
    await neverAnswered(conversation, 'c2');
    await neverAnswered(conversation, 's2');
  });
});

describe('rollback', () => {
  /** Every text of a request's messages: what the model was sent. */
  const sent = (request: ModelRequest) => request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

  it('rolls back the last ended turns: no later request has them or the steered messages they took; the transcript shows them only when asked, marked', async () => {
    const { client, http, model } = stack;
    const conversation = key('rollback-turns');
    await client.chat(conversation, { text: 'keep this', id: 'a' });
    const kept = await answered(client, conversation, 'a');
    const gate = gateName('rollback-steered');
    const turn = await heldAt(stack, gate, conversation, 'b', `wait 1 gate:${gate}`);
    expect(await client.steer(conversation, { text: 'a steered aside', id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    model.gate(gate).open();
    const steered = await answered(client, conversation, 'b');
    expect(steered.steered).toEqual([{ id: 's', text: 'a steered aside' }]);

    const rolled = await client.rollback(conversation, { turns: 1, ifLastTurn: steered.id, id: 'rb1' });
    expect(rolled).toEqual({ turns: [steered.id], stopped: null });
    // Sent again (its id as the header), it answers the same and rolls nothing more back.
    const again = await http.post(conversation, '/rollback', { turns: 1, ifLastTurn: steered.id }, { 'idempotency-key': 'rb1' });
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: rolled });
    // The same id asking another rollback is another input.
    expect((await http.post(conversation, '/rollback', { turns: 2, id: 'rb1' })).status).toBe(422);

    await client.chat(conversation, { text: 'after the rollback', id: 'c' });
    const after = await answered(client, conversation, 'c');
    const [request] = requestsAbout(model.requests, 'after the rollback');
    expect(sent(request)).toEqual(expect.arrayContaining(['keep this', 'answer to keep this']));
    expect(sent(request).filter((text) => text.includes('gate:') || text.includes('a steered aside') || text.includes('waited'))).toEqual([]);

    const shown = (await client.messages(conversation)).items.map((m) => m.id);
    expect(shown).toEqual(['a', `${kept.id}/0`, 'c', `${after.id}/0`]);
    const all = (await client.messages(conversation, { include: 'rolledBack' })).items;
    expect(all.filter((m) => m.rolledBack).map((m) => m.id)).toEqual(['b', `${steered.id}/0`, 's', `${steered.id}/1`]);
    expect(all.filter((m) => !m.rolledBack).map((m) => m.id)).toEqual(shown);
    expect((await client.turn(conversation, steered.id)).rolledBack).toBe(true);
    expect((await client.turn(conversation, kept.id)).rolledBack).toBe(false);

    // ifLastTurn names a turn that is no longer the last: 412, naming the last; an unknown toTurn: 404; more turns than there are: 409.
    const stale = await http.post(conversation, '/rollback', { turns: 1, ifLastTurn: kept.id, id: 'rb2' });
    expect({ status: stale.status, code: stale.body.error?.code, details: stale.body.error?.details }).toEqual({ status: 412, code: 'precondition_failed', details: { lastTurn: after.id } });
    expect((await http.post(conversation, '/rollback', { toTurn: 'no-such-turn', id: 'rb3' })).status).toBe(404);
    expect((await http.post(conversation, '/rollback', { toTurn: steered.id, id: 'rb4' })).status).toBe(404);
    const far = await http.post(conversation, '/rollback', { turns: 3, id: 'rb5' });
    expect({ status: far.status, details: far.body.error?.details }).toEqual({ status: 409, details: { available: 2 } });
    // toTurn keeps the turn it names as the last one.
    expect(await client.rollback(conversation, { toTurn: kept.id })).toEqual({ turns: [after.id], stopped: null });
    expect((await client.messages(conversation)).items.map((m) => m.id)).toEqual(['a', `${kept.id}/0`]);
  });

  it('refuses hostile bodies with 400 and produces nothing', async () => {
    const { client, http } = stack;
    const conversation = key('rollback-bad');
    await client.chat(conversation, { text: 'one', id: 'a' });
    const one = await answered(client, conversation, 'a');
    for (const body of [{}, { turns: 1, toTurn: one.id }, { turns: 0 }, { turns: 17 }, { turns: '1' }, { turns: 1.5 }, { turns: 1, extra: true }, { toTurn: '' }, { turns: 1, stopRunning: 'yes' }]) {
      const answer = await http.post(conversation, '/rollback', body);
      expect({ body, status: answer.status, code: answer.body.error?.code }).toEqual({ body, status: 400, code: 'bad_request' });
    }
    expect((await client.turn(conversation, one.id)).rolledBack).toBe(false);
  });

  it('409 while a turn runs; stopRunning stops it first (its waiting call closed) and rolls it back with the turns before it', async () => {
    const { client, http, model } = stack;
    const conversation = key('rollback-running');
    await client.chat(conversation, { text: 'first ask', id: 'a' });
    const first = await answered(client, conversation, 'a');
    const held = await holding(stack, conversation);
    const busy = await http.post(conversation, '/rollback', { turns: 1, id: 'rb1' });
    expect({ status: busy.status, code: busy.body.error?.code, details: busy.body.error?.details }).toEqual({ status: 409, code: 'conflict', details: { running: held.turn.id } });
    const rolled = await client.rollback(conversation, { turns: 2, stopRunning: true });
    expect(rolled).toEqual({ turns: [first.id, held.turn.id], stopped: held.turn.id });
    const stopped = await answered(client, conversation, 'p');
    expect({ status: stopped.status, rolledBack: stopped.rolledBack }).toEqual({ status: 'stopped', rolledBack: true });
    held.open();
    await client.chat(conversation, { text: 'fresh start', id: 'f' });
    const fresh = await answered(client, conversation, 'f');
    const [request] = requestsAbout(model.requests, 'fresh start');
    expect(request.body.messages.slice(1)).toEqual([{ role: 'user', content: 'fresh start' }]);
    expect((await client.messages(conversation)).items.map((m) => m.id)).toEqual(['f', `${fresh.id}/0`]);
  });
});

describe('through a worker crash', () => {
  it('a retract and a promote stored by a worker that dies before committing its offsets are answered once, and hold', async () => {
    const { client, http } = stack;
    const conversation = key('crash');
    const held = await holding(stack, conversation);
    await client.chat(conversation, { text: 'take me back', id: 'f1' });
    await client.chat(conversation, { text: 'promote me', id: 'f2' });
    // The chats' events published before the first workers die (the read waits for the view to
    // reflect them): otherwise the gateway's reads of this conversation, the retraction's own
    // check included, wait for whichever worker publishes them next, past the companion's
    // 5 s read wait (the session timeout is 6 s), and the retraction answers 503 by chance.
    await client.status(conversation);
    for (const worker of [...stack.workers]) await worker.kill('SIGKILL');
    stack.workers.length = 0;
    const doomed = await stack.startWorker({ CRASH_AT: 'after-ingest' });
    const retracting = http.delete(conversation, '/inputs/f1');
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-ingest');
    await stack.startWorker();
    const retracted = await retracting;
    expect(retracted.status).toBe(200);
    expect(retracted.body).toEqual({ id: 'f1', text: 'take me back' });
    expect((await http.delete(conversation, '/inputs/f1')).status).toBe(409);

    const promoted = await client.promote(conversation, 'f2');
    expect(promoted).toEqual({ id: 'f2', turn: held.turn.id, landed: true });
    held.open();
    const ended = await answered(client, conversation, 'p', 60_000);
    expect(ended.steered).toEqual([{ id: 'f2', text: 'promote me' }]);
    await neverAnswered(conversation, 'f1');
  });

  it('a rollback stored by a worker that dies before committing its offsets is answered once, and changes nothing twice', async () => {
    const { client, http, model } = stack;
    const conversation = key('crash-rollback');
    await client.chat(conversation, { text: 'stays', id: 'a' });
    await answered(client, conversation, 'a');
    await client.chat(conversation, { text: 'goes', id: 'b' });
    const gone = await answered(client, conversation, 'b');
    await client.status(conversation);
    for (const worker of [...stack.workers]) await worker.kill('SIGKILL');
    stack.workers.length = 0;
    const doomed = await stack.startWorker({ CRASH_AT: 'after-ingest' });
    const rolling = http.post(conversation, '/rollback', { turns: 1, id: 'rb' });
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-ingest');
    await stack.startWorker();
    const rolled = await rolling;
    expect({ status: rolled.status, body: rolled.body }).toEqual({ status: 200, body: { turns: [gone.id], stopped: null } });
    expect((await http.post(conversation, '/rollback', { turns: 1, id: 'rb' })).body).toEqual(rolled.body);
    await client.chat(conversation, { text: 'and now', id: 'c' });
    const third = await answered(client, conversation, 'c', 60_000);
    const [request] = requestsAbout(model.requests, 'and now');
    expect(userTexts(request)).toEqual(['stays', 'and now']);
    // One rollback in the log, of one turn.
    const events = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended' && (m.data as { data: { turn: string } }).data.turn === third.id);
    expect(events.filter((m) => m.event === 'turns.rolledBack').map((m) => (m.data as { data: { turns: string[] } }).data.turns)).toEqual([[gone.id]]);
  });
});

const lastUserTextIs = (request: ModelRequest, text: string) => lastUserText(request) === text;
