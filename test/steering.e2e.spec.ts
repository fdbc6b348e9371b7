import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { toolResults, userTexts } from '@rudder/scripted-model';
import { readEvents } from './sse';
import { answered, started, WAIT, heldAt, startStack, type Stack } from './stack';
import { gateName, requestsAbout, requestsWith, testScript } from './scripts';

/** The SPEC's table "What happens to a steered message", row by row, on the real stack. */
let stack: Stack;
beforeAll(async () => {
  // The test worker app: the default agent's tools and `hold`, a tool held at a gate.
  stack = await startStack({ script: testScript, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

const key = (name: string) => `steer/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** Resolves once nothing runs and nothing waits in the conversation. */
async function quiet(conversation: string) {
  await vi.waitFor(async () => {
    const body = await stack.client.status(conversation);
    expect(body).toMatchObject({ running: null, queue: [], steering: [] });
  }, WAIT);
}

describe('a steered message', () => {
  it('sent while a tool call runs: the running turn takes it at that step, and the very next model request has it after the tool results, once', async () => {
    const { client, http, model } = stack;
    const conversation = key('step');
    const gate = gateName('tool');
    const text = `look it up tool-gate:${gate}`;
    expect((await http.post(conversation, '/chat', { text, id: 'p' })).status).toBe(202);
    const turn = await started(client, conversation, 'p');
    // The `hold` tool is running, and stays so until the gate opens.
    await model.gate(gate).reached();
    const answer = await http.post(conversation, '/steer', { text: 'use Celsius', id: 's' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: 's', turn: turn.id, landed: true });
    const status = await vi.waitFor(async () => {
      const s = await client.status(conversation);
      expect(s.steering.length).toBeGreaterThan(0);
      return s;
    }, WAIT);
    expect(status.steering).toEqual([{ id: 's', text: 'use Celsius', revision: 0 }]);
    model.gate(gate).open();

    const ended = await answered(client, conversation, 'p');
    expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's', text: 'use Celsius' }] });
    expect(ended.content).toBe(`waiting for ${text}\n\nanswer to use Celsius`);
    const withSteer = requestsWith(model.requests, 'use Celsius');
    expect(withSteer).toHaveLength(1);
    expect(withSteer[0].body.messages.slice(1)).toMatchObject([
      { role: 'user', content: text },
      { role: 'assistant', tool_calls: [{ function: { name: 'hold' } }] },
      { role: 'tool', content: `held at ${gate}` },
      { role: 'user', content: 'use Celsius' },
    ]);
    expect(withSteer[0].body.messages).toHaveLength(5);
    expect(requestsWith(model.requests, text)).toHaveLength(2);
    expect((await client.turnOf(conversation, 's')).id).toBe(turn.id);
    const transcript = (await client.messages(conversation)).items;
    expect(transcript.map(({ id, role, text, steered }) => ({ id, role, text, steered }))).toEqual([
      { id: 'p', role: 'user', text, steered: false },
      { id: expect.any(String), role: 'assistant', text: `waiting for ${text}`, steered: false },
      { id: 's', role: 'user', text: 'use Celsius', steered: true },
      { id: expect.any(String), role: 'assistant', text: 'answer to use Celsius', steered: false },
    ]);
    expect((await client.status(conversation)).steering).toEqual([]);
  });

  it('sent while the model writes a reply that calls a tool: the turn takes it at the step after the tool results, in the very next request, once', async () => {
    const { client, model } = stack;
    const conversation = key('step-gated');
    const gate = gateName('step');
    const text = `wait 1 gate:${gate}`;
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    expect(await client.steer(conversation, { text: 'use Kelvin', id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    const status = await vi.waitFor(async () => {
      const s = await client.status(conversation);
      expect(s.steering.length).toBeGreaterThan(0);
      return s;
    }, WAIT);
    expect(status.steering).toEqual([{ id: 's', text: 'use Kelvin', revision: 0 }]);
    model.gate(gate).open();
    const ended = await answered(client, conversation, 'p');
    expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's', text: 'use Kelvin' }], content: `waiting for ${text}\n\nanswer to use Kelvin` });
    // Exactly two requests: the one that called the tool, and the next one with its result, then the steer.
    const asked = requestsWith(model.requests, text);
    expect(asked).toHaveLength(2);
    expect(asked[0].body.messages.slice(1)).toEqual([{ role: 'user', content: text }]);
    expect(asked[1].body.messages.slice(1)).toMatchObject([
      { role: 'user', content: text },
      { role: 'assistant', tool_calls: [{ function: { name: 'wait', arguments: '{"ms":1}' } }] },
      { role: 'tool', content: 'waited 1 ms' },
      { role: 'user', content: 'use Kelvin' },
    ]);
    expect(asked[1].body.messages).toHaveLength(5);
  });

  it('sent while the model writes the final answer: the turn takes one more step for it instead of ending', async () => {
    const { client, model } = stack;
    const conversation = key('late');
    const gate = gateName('late');
    const text = `hold gate:${gate}`;
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    const answer = await client.steer(conversation, { text: 'and in French', id: 's' });
    expect(answer).toEqual({ id: 's', turn: turn.id, landed: true });
    model.gate(gate).open();
    const ended = await answered(client, conversation, 'p');
    expect(ended.content).toBe(`answer to ${text}\n\nanswer to and in French`);
    expect(ended.steered).toEqual([{ id: 's', text: 'and in French' }]);
    expect(requestsWith(model.requests, text)).toHaveLength(2);
    const last = requestsWith(model.requests, 'and in French');
    expect(last).toHaveLength(1);
    expect(last[0].body.messages.slice(1)).toEqual([
      { role: 'user', content: text },
      { role: 'assistant', content: `answer to ${text}` },
      { role: 'user', content: 'and in French' },
    ]);
  });

  it('later turns see an earlier steered turn as its prompt, then the message steered to it, then its two answers', async () => {
    const { client, model } = stack;
    const conversation = key('history');
    const gate = gateName('history');
    const text = `hold gate:${gate}`;
    await heldAt(stack, gate, conversation, 'p', text);
    expect((await client.steer(conversation, { text: 'steered in', id: 's' })).landed).toBe(true);
    model.gate(gate).open();
    await answered(client, conversation, 'p');
    await client.chat(conversation, { text: 'the next turn', id: 'c' });
    await answered(client, conversation, 'c');
    const [request] = requestsAbout(model.requests, 'the next turn');
    expect(request.body.messages[0].role).toBe('system');
    expect(request.body.messages.slice(1)).toEqual([
      { role: 'user', content: text },
      { role: 'user', content: 'steered in' },
      { role: 'assistant', content: `answer to ${text}` },
      { role: 'assistant', content: 'answer to steered in' },
      { role: 'user', content: 'the next turn' },
    ]);
  });

  it('sent when no turn is running: it is answered as a turn of its own, which it starts', async () => {
    const { client, model } = stack;
    const conversation = key('idle');
    const answer = await client.steer(conversation, { text: 'hello from a steer', id: 's' });
    expect(answer).toEqual({ id: 's', turn: null, landed: false });
    const turn = await answered(client, conversation, 's');
    expect(turn).toMatchObject({ prompt: { id: 's', text: 'hello from a steer' }, content: 'answer to hello from a steer', steered: [] });
    expect(requestsWith(model.requests, 'hello from a steer').map((r) => r.body.messages.slice(1))).toEqual([[{ role: 'user', content: 'hello from a steer' }]]);
  });

  it('sent after the turn closed: it is answered as a turn of its own, in order, before any input sent after it', async () => {
    const { client } = stack;
    const conversation = key('closed');
    await client.chat(conversation, { text: 'first', id: 'p' });
    await answered(client, conversation, 'p');
    expect(await client.steer(conversation, { text: 'too late', id: 's' })).toEqual({ id: 's', turn: null, landed: false });
    await client.chat(conversation, { text: 'after the steer', id: 'c' });
    const steerTurn = await answered(client, conversation, 's');
    const chatTurn = await answered(client, conversation, 'c');
    expect(steerTurn.prompt).toEqual({ id: 's', text: 'too late' });
    expect(Date.parse(chatTurn.startedAt)).toBeGreaterThanOrEqual(Date.parse(steerTurn.endedAt!));
  });

  it('to a turn that is then stopped: taken, it ends with the turn; not taken, it is answered as a turn of its own', async () => {
    const { client, http, model } = stack;
    const conversation = key('stopped');
    const gate = gateName('stopped');
    const text = `wait 1 gate:${gate}`;
    const events = http.events(conversation, { 'last-event-id': '0' });
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    // Taken at the step after the first tool; its own request calls the tool again, for ten minutes.
    expect(await client.steer(conversation, { text: 'then wait 600000', id: 's1' })).toEqual({ id: 's1', turn: turn.id, landed: true });
    model.gate(gate).open();
    await readEvents(await events, (_, all) => all.filter((m) => m.event === 'tool.started').length === 2);
    expect(await client.steer(conversation, { text: 'never taken', id: 's2' })).toEqual({ id: 's2', turn: turn.id, landed: true });
    const stop = await http.post(conversation, '/stop', {});
    expect(stop.status).toBe(202);
    expect(stop.body).toEqual({ turn: turn.id });

    const stopped = await answered(client, conversation, 'p');
    expect(stopped).toMatchObject({ status: 'stopped', steered: [{ id: 's1', text: 'then wait 600000' }] });
    expect((await client.turnOf(conversation, 's1')).id).toBe(turn.id);
    const own = await answered(client, conversation, 's2');
    expect(own).toMatchObject({ prompt: { id: 's2', text: 'never taken' }, status: 'completed', content: 'answer to never taken' });
    expect(requestsAbout(model.requests, 'then wait 600000')).toHaveLength(1);
    // The call the stop cut off has a result: the conversation never holds a call without one.
    const all = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    const cutOff = all.filter((m) => m.event === 'tool.ended').map((m) => (m.data as { data: { isError: boolean; result: string } }).data);
    expect(cutOff).toEqual([
      expect.objectContaining({ isError: false, result: 'waited 1 ms' }),
      expect.objectContaining({ isError: true, result: 'not run to the end: the turn was stopped' }),
    ]);
  });

  it('to a turn that then fails before its step: not taken, it is answered as a turn of its own', async () => {
    const { client, model } = stack;
    const conversation = key('failed');
    const gate = gateName('failed');
    const turn = await heldAt(stack, gate, conversation, 'p', `fail gate:${gate}`);
    expect(await client.steer(conversation, { text: 'after the failure', id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    model.gate(gate).open();
    const failed = await answered(client, conversation, 'p', 60_000);
    expect(failed).toMatchObject({ status: 'failed', steered: [] });
    expect(failed.outcome).toMatch(/500/);
    const own = await answered(client, conversation, 's');
    expect(own).toMatchObject({ prompt: { id: 's' }, status: 'completed', content: 'answer to after the failure' });
    expect(requestsWith(model.requests, 'after the failure')).toHaveLength(1);
  });

  it('taken by a turn that then fails: it ends with the turn and is not answered again', async () => {
    const { client, http, model } = stack;
    const conversation = key('taken-failed');
    const gate = gateName('taken-failed');
    const text = `wait 1 gate:${gate}`;
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    expect(await client.steer(conversation, { text: 'then fail', id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    model.gate(gate).open();
    const failed = await answered(client, conversation, 'p', 60_000);
    expect(failed).toMatchObject({ status: 'failed', steered: [{ id: 's', text: 'then fail' }] });
    await quiet(conversation);
    expect((await client.turnOf(conversation, 's')).id).toBe(turn.id);
    // Every request that held the steer was the failed turn's (its client retries), after the tool result; none started a turn of its own.
    const asked = requestsWith(model.requests, 'then fail');
    expect(asked.length).toBeGreaterThan(0);
    for (const request of asked) expect(userTexts(request)).toEqual([text, 'then fail']);
    const all = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    expect(all.filter((m) => m.event === 'turn.started')).toHaveLength(1);
  });

  it('to a turn whose worker is killed before the step: the turn resumes on the next worker and takes it there, once', async () => {
    const { client, model } = stack;
    const conversation = key('killed');
    const gate = gateName('killed');
    const text = `wait 1 gate:${gate}`;
    const turn = await heldAt(stack, gate, conversation, 'p', text);
    expect((await client.steer(conversation, { text: 'outlive the worker', id: 's' })).landed).toBe(true);
    for (const worker of [...stack.workers]) await worker.kill('SIGKILL');
    stack.workers.length = 0;
    await stack.startWorker();
    // The reply was never stored, so the next worker asks for it again.
    await model.gate(gate).reached(2);
    model.gate(gate).open();
    const ended = await answered(client, conversation, 'p', 60_000);
    expect(ended).toMatchObject({ id: turn.id, status: 'completed', steered: [{ id: 's', text: 'outlive the worker' }] });
    expect(requestsWith(model.requests, 'outlive the worker')).toHaveLength(1);
    expect((await client.turnOf(conversation, 's')).id).toBe(turn.id);
  });

  it('the same steer id again answers the same decision and stores nothing new; the same id with another text is 422', async () => {
    const { client, http, model } = stack;
    const conversation = key('again');
    const gate = gateName('again');
    const turn = await heldAt(stack, gate, conversation, 'p', `hold gate:${gate}`);
    const first = await http.post(conversation, '/steer', { text: 'only once' }, { 'idempotency-key': 'same' });
    const again = await http.post(conversation, '/steer', { text: 'only once', id: 'same' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(first.body).toEqual({ id: 'same', turn: turn.id, landed: true });
    // Another text under the id is 422, before the companion shows the first steer
    // (apps/gateway/src/inputs/steer/steer.int.spec.ts) and after.
    await vi.waitFor(async () => expect((await client.status(conversation)).steering.map((s) => s.id)).toContain('same'), WAIT);
    const reused = await http.post(conversation, '/steer', { text: 'another text', id: 'same' });
    expect(reused.status).toBe(422);
    model.gate(gate).open();
    await answered(client, conversation, 'p');
    expect(requestsWith(model.requests, 'only once')).toHaveLength(1);
    expect((await client.messages(conversation)).items.filter((m) => m.text === 'only once')).toHaveLength(1);
  });

  it('passes the same input checks as a chat', async () => {
    const { http } = stack;
    const conversation = key('checks');
    expect((await http.post(conversation, '/steer', { text: '' })).status).toBe(400);
    expect((await http.post(conversation, '/steer', { text: 7 })).status).toBe(400);
    expect((await http.post(conversation, '/steer', { text: 'x'.repeat(9000) })).status).toBe(413);
    expect((await http.post('no spaces allowed', '/steer', { text: 'hi' })).status).toBe(400);
    // Nothing entered: the key is still one nobody has written to (no status to read).
    expect((await http.get(conversation)).status).toBe(404);
  });

  it('clients see steer.accepted and steer.taken on the event stream, between the two answers', async () => {
    const { client, http, model } = stack;
    const conversation = key('sse');
    const gate = gateName('sse');
    const stream = await http.events(conversation);
    const reading = readEvents(stream, (m) => m.event === 'turn.ended');
    await heldAt(stack, gate, conversation, 'p', `wait 1 gate:${gate}`);
    await client.steer(conversation, { text: 'streamed steer', id: 's' });
    model.gate(gate).open();
    const types = (await reading).map((m) => m.event).filter((t) => t !== 'token');
    expect(types).toEqual([
      'conversation.opened',
      'input.accepted',
      'turn.started',
      'input.delivered',
      'input.accepted',
      'steer.accepted',
      'model.replied',
      'tool.started',
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
    const gate = gateName('crash');
    const doomed = await stack.startWorker({ CRASH_AT: 'after-steer-taken' });
    for (const worker of stack.workers.filter((w) => w !== doomed)) await worker.kill('SIGTERM');
    await heldAt(stack, gate, conversation, 'p', `wait 12 gate:${gate}`);
    await client.steer(conversation, { text: 'survive the crash', id: 's' });
    model.gate(gate).open();
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-steer-taken');
    await stack.startWorker();
    const ended = await answered(client, conversation, 'p', 60_000);
    expect(ended.steered).toEqual([{ id: 's', text: 'survive the crash' }]);
    const withSteer = requestsWith(model.requests, 'survive the crash');
    expect(withSteer).toHaveLength(1);
    expect(userTexts(withSteer[0]).filter((t) => t === 'survive the crash')).toHaveLength(1);
    expect(toolResults(withSteer[0]).map((r) => r.content)).toEqual(['waited 12 ms']);
    expect(withSteer[0].body.messages.at(-1)).toEqual({ role: 'user', content: 'survive the crash' });
  });
});
