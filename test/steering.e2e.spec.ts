import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolResults, userTexts } from '@rudder/scripted-model';
import { readEvents } from './sse';
import { eventually, startStack, type Stack } from './stack';
import { requestsAbout, requestsWith, testScript } from './scripts';

/** The SPEC's table "What happens to a steered message", row by row, on the real stack. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const key = (name: string) => `steer/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** Sends a chat and resolves once its turn runs and the model has been asked `asked` times about it. */
async function running(conversation: string, id: string, text: string, asked = 1) {
  await stack.client.chat(conversation, { text, id });
  const turn = await stack.client.started(conversation, id);
  await eventually(async () => (requestsWith(stack.model.requests, text).length >= asked ? true : undefined), { what: `the model asked about ${text}` });
  return turn;
}

describe('a steered message', () => {
  it('sent while a tool call runs: the running turn takes it at that step, and the very next model request has it after the tool results, once', async () => {
    const { client, model } = stack;
    const conversation = key('step');
    const turn = await running(conversation, 'p', 'wait 1500');
    const answer = await client.steer(conversation, { text: 'use Celsius', id: 's' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: 's', turn: turn.id, landed: true });
    const status = await eventually(async () => {
      const s = (await client.status(conversation)).body;
      return s.steering.length > 0 ? s : undefined;
    });
    expect(status.steering).toEqual([{ id: 's', text: 'use Celsius' }]);

    const ended = await client.answered(conversation, 'p');
    expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's', text: 'use Celsius' }] });
    expect(ended.content).toBe('waiting for wait 1500\n\nanswer to use Celsius');
    const withSteer = requestsWith(model.requests, 'use Celsius');
    expect(withSteer).toHaveLength(1);
    expect(withSteer[0].body.messages.slice(-3)).toMatchObject([
      { role: 'assistant', tool_calls: [{ function: { name: 'wait' } }] },
      { role: 'tool', content: 'waited 1500 ms' },
      { role: 'user', content: 'use Celsius' },
    ]);
    expect((await client.turnOf(conversation, 's')).body.id).toBe(turn.id);
    const transcript = (await client.messages(conversation)).body.items;
    expect(transcript.map(({ id, role, text, steered }) => ({ id, role, text, steered }))).toEqual([
      { id: 'p', role: 'user', text: 'wait 1500', steered: false },
      { id: expect.any(String), role: 'assistant', text: 'waiting for wait 1500', steered: false },
      { id: 's', role: 'user', text: 'use Celsius', steered: true },
      { id: expect.any(String), role: 'assistant', text: 'answer to use Celsius', steered: false },
    ]);
    expect((await client.status(conversation)).body.steering).toEqual([]);
  });

  it('sent while the model writes the final answer: the turn takes one more step for it instead of ending', async () => {
    const { client, model } = stack;
    const conversation = key('late');
    const turn = await running(conversation, 'p', 'slow 1500');
    const answer = await client.steer(conversation, { text: 'and in French', id: 's' });
    expect(answer.body).toEqual({ id: 's', turn: turn.id, landed: true });
    const ended = await client.answered(conversation, 'p');
    expect(ended.content).toBe('answer to slow 1500\n\nanswer to and in French');
    expect(ended.steered).toEqual([{ id: 's', text: 'and in French' }]);
    const last = requestsWith(model.requests, 'and in French');
    expect(last).toHaveLength(1);
    expect(last[0].body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'answer to slow 1500' },
      { role: 'user', content: 'and in French' },
    ]);
  });

  it('sent when no turn is running: it is answered as a turn of its own, which it starts', async () => {
    const { client } = stack;
    const conversation = key('idle');
    const answer = await client.steer(conversation, { text: 'hello from a steer', id: 's' });
    expect(answer.body).toEqual({ id: 's', turn: null, landed: false });
    const turn = await client.answered(conversation, 's');
    expect(turn).toMatchObject({ prompt: { id: 's', text: 'hello from a steer' }, content: 'answer to hello from a steer', steered: [] });
  });

  it('sent after the turn closed: it is answered as a turn of its own, in order, before any input sent after it', async () => {
    const { client } = stack;
    const conversation = key('closed');
    await client.chat(conversation, { text: 'first', id: 'p' });
    await client.answered(conversation, 'p');
    expect((await client.steer(conversation, { text: 'too late', id: 's' })).body.landed).toBe(false);
    await client.chat(conversation, { text: 'after the steer', id: 'c' });
    const steerTurn = await client.answered(conversation, 's');
    const chatTurn = await client.answered(conversation, 'c');
    expect(Date.parse(chatTurn.startedAt)).toBeGreaterThanOrEqual(Date.parse(steerTurn.endedAt!));
  });

  it('to a turn that is then stopped: taken, it ends with the turn; not taken, it is answered as a turn of its own', async () => {
    const { client, model } = stack;
    const conversation = key('stopped');
    const turn = await running(conversation, 'p', 'wait 1000');
    // Taken at the step after the first tool; its own request calls the tool again, long.
    expect((await client.steer(conversation, { text: 'then wait 20000', id: 's1' })).body.landed).toBe(true);
    await eventually(async () => (requestsWith(model.requests, 'then wait 20000').length === 1 ? true : undefined));
    expect((await client.steer(conversation, { text: 'never taken', id: 's2' })).body).toEqual({ id: 's2', turn: turn.id, landed: true });
    const stop = await client.stop(conversation);
    expect(stop.status).toBe(202);
    expect(stop.body).toEqual({ turn: turn.id });

    const stopped = await client.answered(conversation, 'p');
    expect(stopped).toMatchObject({ status: 'stopped', steered: [{ id: 's1', text: 'then wait 20000' }] });
    expect(Date.parse(stopped.endedAt!) - Date.parse(stopped.startedAt)).toBeLessThan(15_000);
    expect((await client.turnOf(conversation, 's1')).body.id).toBe(turn.id);
    const own = await client.answered(conversation, 's2');
    expect(own).toMatchObject({ prompt: { id: 's2', text: 'never taken' }, status: 'completed', content: 'answer to never taken' });
    expect(requestsAbout(model.requests, 'then wait 20000')).toHaveLength(1);
    // The call the stop cut off has a result: the conversation never holds a call without one.
    const events = await readEvents(await client.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    const cutOff = events.filter((m) => m.event === 'tool.ended').map((m) => (m.data as { data: { isError: boolean; result: string } }).data);
    expect(cutOff).toEqual([
      expect.objectContaining({ isError: false, result: 'waited 1000 ms' }),
      expect.objectContaining({ isError: true, result: 'not run to the end: the turn was stopped' }),
    ]);
  });

  it('to a turn that then fails: not taken, it is answered as a turn of its own', async () => {
    const { client } = stack;
    const conversation = key('failed');
    const turn = await running(conversation, 'p', 'fail 700');
    expect((await client.steer(conversation, { text: 'after the failure', id: 's' })).body).toEqual({ id: 's', turn: turn.id, landed: true });
    const failed = await client.answered(conversation, 'p', 60_000);
    expect(failed).toMatchObject({ status: 'failed', steered: [] });
    expect(failed.outcome).toMatch(/500/);
    const own = await client.answered(conversation, 's');
    expect(own).toMatchObject({ prompt: { id: 's' }, status: 'completed', content: 'answer to after the failure' });
  });

  it('to a turn whose worker is killed before the step: the turn resumes on the next worker and takes it there, once', async () => {
    const { client, model } = stack;
    const conversation = key('killed');
    const turn = await running(conversation, 'p', 'wait 2000');
    expect((await client.steer(conversation, { text: 'outlive the worker', id: 's' })).body.landed).toBe(true);
    for (const worker of [...stack.workers]) await worker.kill('SIGKILL');
    stack.workers.length = 0;
    await stack.startWorker();
    const ended = await client.answered(conversation, 'p', 60_000);
    expect(ended).toMatchObject({ id: turn.id, status: 'completed', steered: [{ id: 's', text: 'outlive the worker' }] });
    expect(requestsWith(model.requests, 'outlive the worker')).toHaveLength(1);
    expect((await client.turnOf(conversation, 's')).body.id).toBe(turn.id);
  });

  it('the same steer id again answers the same decision and stores nothing new; the same id with another text is 422', async () => {
    const { client, model } = stack;
    const conversation = key('again');
    const turn = await running(conversation, 'p', 'wait 1000');
    const first = await client.steer(conversation, { text: 'only once' }, { 'idempotency-key': 'same' });
    const again = await client.steer(conversation, { text: 'only once', id: 'same' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(first.body).toEqual({ id: 'same', turn: turn.id, landed: true });
    const reused = await client.steer(conversation, { text: 'another text', id: 'same' });
    expect(reused.status).toBe(422);
    await client.answered(conversation, 'p');
    expect(requestsWith(model.requests, 'only once')).toHaveLength(1);
    expect((await client.messages(conversation)).body.items.filter((m) => m.text === 'only once')).toHaveLength(1);
  });

  it('passes the same input checks as a chat', async () => {
    const { client } = stack;
    const conversation = key('checks');
    expect((await client.steer(conversation, { text: '' })).status).toBe(400);
    expect((await client.steer(conversation, { text: 7 })).status).toBe(400);
    expect((await client.steer(conversation, { text: 'x'.repeat(9000) })).status).toBe(413);
    expect((await client.steer('no spaces allowed', { text: 'hi' })).status).toBe(400);
    expect((await client.status(conversation)).body).toMatchObject({ queue: [], steering: [], lastInputId: null });
  });

  it('clients see steer.accepted and steer.taken on the event stream, between the two answers', async () => {
    const { client } = stack;
    const conversation = key('sse');
    const stream = await client.events(conversation);
    const reading = readEvents(stream, (m) => m.event === 'turn.ended');
    await running(conversation, 'p', 'wait 800');
    await client.steer(conversation, { text: 'streamed steer', id: 's' });
    const types = (await reading).map((m) => m.event).filter((t) => t !== 'token');
    expect(types).toEqual([
      'conversation.opened',
      'input.accepted',
      'turn.started',
      'input.delivered',
      'model.replied',
      'tool.started',
      'input.accepted',
      'steer.accepted',
      'tool.ended',
      'steer.taken',
      'input.delivered',
      'model.replied',
      'turn.ended',
    ]);
  });

  it('a worker killed after a step with a taken steer commits: the retried request has it exactly once and it is never taken again', async () => {
    const { client, model } = stack;
    const conversation = key('crash');
    const doomed = await stack.startWorker({ CRASH_AT: 'after-steer-taken' });
    for (const worker of stack.workers.filter((w) => w !== doomed)) await worker.kill('SIGTERM');
    await running(conversation, 'p', 'wait 1200');
    await client.steer(conversation, { text: 'survive the crash', id: 's' });
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-steer-taken');
    await stack.startWorker();
    const ended = await client.answered(conversation, 'p', 60_000);
    expect(ended.steered).toEqual([{ id: 's', text: 'survive the crash' }]);
    const withSteer = requestsWith(model.requests, 'survive the crash');
    expect(withSteer).toHaveLength(1);
    expect(userTexts(withSteer[0]).filter((t) => t === 'survive the crash')).toHaveLength(1);
    expect(toolResults(withSteer[0]).map((r) => r.content)).toEqual(['waited 1200 ms']);
    expect(withSteer[0].body.messages.at(-1)).toEqual({ role: 'user', content: 'survive the crash' });
  });
});
