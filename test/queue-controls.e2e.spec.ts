import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolResults, userTexts } from '@rudder/scripted-model';
import { readEvents } from './sse';
import { eventually, startStack, type Stack } from './stack';
import { requestsAbout, requestsWith, testScript } from './scripts';

/** SPEC "Queue controls", bullet by bullet, on the real stack. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const key = (name: string) => `queue/${name}-${Math.random().toString(36).slice(2, 8)}`;

async function running(conversation: string, id: string, text: string) {
  const sent = await stack.client.chat(conversation, { text, id });
  expect(sent.status).toBe(202);
  const turn = await stack.client.started(conversation, id);
  await eventually(async () => (requestsWith(stack.model.requests, text).length > 0 ? true : undefined), { what: `the model asked about ${text}` });
  return turn;
}

/** Never answered: no turn has it as prompt or took it, even after the conversation went quiet. */
async function neverAnswered(conversation: string, input: string) {
  await eventually(async () => {
    const { body } = await stack.client.status(conversation);
    return body.running === null && body.queue.length === 0 ? true : undefined;
  });
  expect((await stack.client.turnOf(conversation, input)).status).toBe(404);
}

describe('pending inputs', () => {
  it('status lists every pending input in order — steering for the running turn, queue behind it — and the stream reports them', async () => {
    const { client } = stack;
    const conversation = key('pending');
    const stream = readEvents(await client.events(conversation), (m) => m.event === 'input.retracted');
    await running(conversation, 'p', 'wait 1500');
    await client.chat(conversation, { text: 'follow-up one', id: 'c1' });
    await client.steer(conversation, { text: 'a steer', id: 's1' });
    await client.chat(conversation, { text: 'follow-up two', id: 'c2' });
    const status = await eventually(async () => {
      const { body } = await client.status(conversation);
      return body.queue.length === 2 && body.steering.length === 1 ? body : undefined;
    });
    expect(status.steering).toEqual([{ id: 's1', text: 'a steer' }]);
    expect(status.queue).toEqual([
      { id: 'c1', kind: 'chat', text: 'follow-up one' },
      { id: 'c2', kind: 'chat', text: 'follow-up two' },
    ]);
    await client.retract(conversation, 'c2');
    const types = (await stream).map((m) => m.event);
    expect(types).toContain('input.accepted');
    expect(types).toContain('input.delivered');
    expect(types.at(-1)).toBe('input.retracted');
  });
});

describe('retract', () => {
  it('takes back a pending input and answers its text; it is never answered', async () => {
    const { client, model } = stack;
    const conversation = key('retract');
    await running(conversation, 'p', 'wait 1000');
    await client.chat(conversation, { text: 'never mind this', id: 'c' });
    const retracted = await client.retract(conversation, 'c');
    expect(retracted.status).toBe(200);
    expect(retracted.body).toEqual({ id: 'c', text: 'never mind this' });
    await client.answered(conversation, 'p');
    await neverAnswered(conversation, 'c');
    expect(requestsWith(model.requests, 'never mind this')).toHaveLength(0);
  });

  it('?latest=chat and ?latest=steer take back the most recent pending one of that queue', async () => {
    const { client } = stack;
    const conversation = key('latest');
    await running(conversation, 'p', 'wait 1500');
    await client.chat(conversation, { text: 'older', id: 'c1' });
    await client.chat(conversation, { text: 'newer', id: 'c2' });
    await client.steer(conversation, { text: 'steer me', id: 's' });
    expect((await client.retractLatest(conversation, 'chat')).body).toEqual({ id: 'c2', text: 'newer' });
    expect((await client.retractLatest(conversation, 'steer')).body).toEqual({ id: 's', text: 'steer me' });
    const first = await client.answered(conversation, 'p');
    expect(first.steered).toEqual([]);
    await client.answered(conversation, 'c1');
    await neverAnswered(conversation, 'c2');
  });

  it('refuses with 409 once the input was delivered, and 404 for an unknown one', async () => {
    const { client } = stack;
    const conversation = key('delivered');
    await running(conversation, 'p', 'wait 300');
    expect((await client.retract(conversation, 'p')).status).toBe(409);
    expect((await client.retract(conversation, 'no-such-input')).status).toBe(404);
  });

  it('racing the turn that would take it, exactly one of the two wins, and both views agree', async () => {
    const { client } = stack;
    for (let round = 0; round < 4; round++) {
      const conversation = key(`race-${round}`);
      await client.chat(conversation, { text: `race ${round}`, id: 'r' });
      const retract = await client.retract(conversation, 'r');
      expect([200, 409]).toContain(retract.status);
      if (retract.status === 200) {
        await neverAnswered(conversation, 'r');
        expect((await client.messages(conversation)).body.items).toEqual([]);
      } else {
        const turn = await client.answered(conversation, 'r');
        expect(turn.content).toBe(`answer to race ${round}`);
      }
    }
  });
});

describe('promote', () => {
  it('turns a pending follow-up into a steer of the running turn, taken at the next step without cancelling the request in flight', async () => {
    const { client, model } = stack;
    const conversation = key('promote');
    const turn = await running(conversation, 'p', 'slow 1200');
    await client.chat(conversation, { text: 'see this now', id: 'f' });
    const before = requestsAbout(model.requests, 'slow 1200').length;
    const promoted = await client.promote(conversation, 'f');
    expect(promoted.status).toBe(200);
    expect(promoted.body).toEqual({ id: 'f', turn: turn.id, landed: true });
    const ended = await client.answered(conversation, 'p');
    expect(ended.steered).toEqual([{ id: 'f', text: 'see this now' }]);
    expect(ended.content).toBe('answer to slow 1200\n\nanswer to see this now');
    // The request in flight was not asked again: the promoted message came in the next one.
    expect(requestsAbout(model.requests, 'slow 1200')).toHaveLength(before);
    expect((await client.turnOf(conversation, 'f')).body.id).toBe(turn.id);
  });

  it('refuses with 409 what is not a pending follow-up any more', async () => {
    const { client } = stack;
    const conversation = key('promote-late');
    await running(conversation, 'p', 'wait 300');
    expect((await client.promote(conversation, 'p')).status).toBe(409);
    expect((await client.promote(conversation, 'unknown')).status).toBe(404);
  });
});

describe('onBusy', () => {
  it('reject answers 409 while a turn runs, and nothing is enqueued', async () => {
    const { client } = stack;
    const conversation = key('reject');
    await running(conversation, 'p', 'wait 800');
    const refused = await client.chat(conversation, { text: 'not now', id: 'x', onBusy: 'reject' });
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe('conflict');
    await client.answered(conversation, 'p');
    await neverAnswered(conversation, 'x');
  });

  it('interrupt during a tool call: the running turn ends superseded at its next step, keeping what it did, then the new input runs', async () => {
    const { client, model } = stack;
    const conversation = key('interrupt');
    const turn = await running(conversation, 'p', 'wait 801');
    await client.chat(conversation, { text: 'queued before', id: 'q' });
    await client.chat(conversation, { text: 'do this instead', id: 'i', onBusy: 'interrupt' });
    const superseded = await client.answered(conversation, 'p');
    expect(superseded).toMatchObject({ id: turn.id, status: 'superseded', content: 'waiting for wait 801' });
    const next = await client.answered(conversation, 'i');
    expect(Date.parse(next.startedAt)).toBeGreaterThanOrEqual(Date.parse(superseded.endedAt!));
    const queued = await client.answered(conversation, 'q');
    expect(Date.parse(queued.startedAt)).toBeGreaterThanOrEqual(Date.parse(next.endedAt!));
    // What the superseded turn did stays in the history, its tool call with a result.
    const request = requestsAbout(model.requests, 'do this instead')[0];
    expect(userTexts(request)).toEqual(['wait 801', 'do this instead']);
    expect(request.body.messages).toContainEqual({ role: 'assistant', content: 'waiting for wait 801' });
    // It was not asked again after its tool's result: it ended at that step.
    expect(requestsWith(model.requests, 'wait 801').some((r) => toolResults(r).length > 0)).toBe(false);
  });

  it('rollback stops the running turn and drops its partial work from the next model request', async () => {
    const { client, model } = stack;
    const conversation = key('rollback');
    await running(conversation, 'p', 'wait 5000');
    await client.chat(conversation, { text: 'start over', id: 'r', onBusy: 'rollback' });
    const stopped = await client.answered(conversation, 'p');
    expect(stopped.status).toBe('stopped');
    await client.answered(conversation, 'r');
    const request = requestsAbout(model.requests, 'start over')[0];
    expect(request.body.messages.slice(1)).toEqual([{ role: 'user', content: 'start over' }]);
  });
});

describe('preconditions, stop with discardPending, several messages', () => {
  it('ifLastInputId: 412 when the last accepted input is another one', async () => {
    const { client } = stack;
    const conversation = key('precondition');
    await client.chat(conversation, { text: 'one', id: 'a' });
    await client.chat(conversation, { text: 'two', id: 'b' });
    const stale = await client.chat(conversation, { text: 'stale', id: 'c', ifLastInputId: 'a' });
    expect(stale.status).toBe(412);
    expect((await client.steer(conversation, { text: 'stale steer', id: 'd', ifLastInputId: 'a' })).status).toBe(412);
    expect((await client.chat(conversation, { text: 'fresh', id: 'e', ifLastInputId: 'b' })).status).toBe(202);
    await client.answered(conversation, 'e');
    await neverAnswered(conversation, 'c');
  });

  it('stop with discardPending discards every pending input and reports each; none is answered', async () => {
    const { client } = stack;
    const conversation = key('discard');
    await running(conversation, 'p', 'wait 5000');
    await client.chat(conversation, { text: 'pending one', id: 'c1' });
    await client.steer(conversation, { text: 'pending steer', id: 's1' });
    const stream = readEvents(await client.events(conversation, { 'last-event-id': '0' }), (_, all) => all.filter((m) => m.event === 'input.discarded').length === 2);
    expect((await client.stop(conversation, { discardPending: true })).status).toBe(202);
    const discarded = (await stream).filter((m) => m.event === 'input.discarded').map((m) => (m.data as { data: { input: { id: string } } }).data.input.id);
    expect(discarded.sort()).toEqual(['c1', 's1']);
    expect((await client.answered(conversation, 'p')).status).toBe('stopped');
    await neverAnswered(conversation, 'c1');
    await neverAnswered(conversation, 's1');
  });

  it('a chat of several messages stores them as separate user messages answered by one reply', async () => {
    const { client, model } = stack;
    const conversation = key('several');
    await client.chat(conversation, { messages: ['first part', 'second part'], id: 'm' });
    const turn = await client.answered(conversation, 'm');
    expect(turn.content).toBe('answer to second part');
    const request = requestsAbout(model.requests, 'second part')[0];
    expect(request.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'first part' },
      { role: 'user', content: 'second part' },
    ]);
    const rows = (await client.messages(conversation)).body.items.filter((m) => m.role === 'user');
    expect(rows.map((r) => r.text)).toEqual(['first part', 'second part']);
  });
});

describe('bounds', () => {
  it('a fifth pending follow-up answers 429 with the counts and a Retry-After; nothing accepted is lost', async () => {
    const { client } = stack;
    const conversation = key('bound-chats');
    await running(conversation, 'p', 'wait 1500');
    for (const n of [1, 2, 3, 4]) expect((await client.chat(conversation, { text: `f${n}`, id: `f${n}` })).status).toBe(202);
    const full = await client.chat(conversation, { text: 'f5', id: 'f5' });
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.body.error).toMatchObject({ code: 'queue_full', message: expect.stringContaining('4 queued') });
    for (const n of [1, 2, 3, 4]) expect((await client.answered(conversation, `f${n}`)).status).toBe('completed');
    await neverAnswered(conversation, 'f5');
  });

  it('a fifth waiting steer answers 429, and so does text past the characters bound', async () => {
    const { client } = stack;
    const conversation = key('bound-steers');
    await running(conversation, 'p', 'wait 4000');
    for (const n of [1, 2, 3, 4]) expect((await client.steer(conversation, { text: `s${n}`, id: `s${n}` })).body.landed).toBe(true);
    expect((await client.steer(conversation, { text: 's5', id: 's5' })).status).toBe(429);
    const big = await client.chat(conversation, { text: 'x'.repeat(7995), id: 'big' });
    expect(big.status).toBe(429);
    const ended = await client.answered(conversation, 'p');
    expect(ended.steered.map((s) => s.id)).toEqual(['s1', 's2', 's3', 's4']);
  });
});

describe('through a worker crash', () => {
  it('a retract and a promote stored by a worker that dies before committing its offsets are answered once, and hold', async () => {
    const { client } = stack;
    const conversation = key('crash');
    const turn = await running(conversation, 'p', 'wait 12000');
    await client.chat(conversation, { text: 'take me back', id: 'f1' });
    await client.chat(conversation, { text: 'promote me', id: 'f2' });
    for (const worker of [...stack.workers]) await worker.kill('SIGKILL');
    stack.workers.length = 0;
    const doomed = await stack.startWorker({ CRASH_AT: 'after-ingest' });
    const retracting = client.retract(conversation, 'f1');
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-ingest');
    await stack.startWorker();
    const retracted = await retracting;
    expect(retracted.status).toBe(200);
    expect(retracted.body).toEqual({ id: 'f1', text: 'take me back' });
    expect((await client.retract(conversation, 'f1')).status).toBe(409);

    const promoted = await client.promote(conversation, 'f2');
    expect(promoted.body).toEqual({ id: 'f2', turn: turn.id, landed: true });
    const ended = await client.answered(conversation, 'p', 60_000);
    expect(ended.steered).toEqual([{ id: 'f2', text: 'promote me' }]);
    await neverAnswered(conversation, 'f1');
  });
});
