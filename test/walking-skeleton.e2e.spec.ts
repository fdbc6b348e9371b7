import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolResults } from '@rudder/scripted-model';
import { answered, started, startStack, type Stack } from './stack';
import { gateName, requestsAbout, testScript } from './scripts';
import { readEvents } from './sse';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const key = (name: string) => `e2e/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('a chat, end to end through gateway, Kafka, worker, outbox and companion', () => {
  it('a chat is answered: the turn, the transcript and the status say so', async () => {
    const { client, http } = stack;
    const conversation = key('hello');
    const sent = await http.post(conversation, '/chat', { text: 'hello', id: 'hello-1' });
    expect(sent.status).toBe(202);
    expect(sent.body).toEqual({ id: 'hello-1', turn: null, position: 0 });

    const turn = await answered(client, conversation, 'hello-1');
    expect(turn).toMatchObject({ prompt: { id: 'hello-1', text: 'hello' }, status: 'completed', outcome: null, steered: [], content: 'answer to hello' });
    expect(turn.endedAt).not.toBeNull();
    expect(await client.turn(conversation, turn.id)).toEqual(turn);

    const transcript = await client.messages(conversation);
    expect(transcript.items.map(({ role, text, turn: t, steered }) => ({ role, text, t, steered }))).toEqual([
      { role: 'user', text: 'hello', t: turn.id, steered: false },
      { role: 'assistant', text: 'answer to hello', t: turn.id, steered: false },
    ]);
    // The status reflects the whole turn: its position is the turn's last event's (`turn.ended`).
    const history = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    const ended = (history.at(-1)!.data as { position: number }).position;
    expect(await client.status(conversation)).toEqual({
      key: conversation,
      running: null,
      steering: [],
      queue: [],
      lastInputId: 'hello-1',
      agent: 'default',
      // What its model request carried, in tokens, of the agent's budget; no compaction yet.
      context: { carriedTokens: expect.any(Number), maxTokens: expect.any(Number), lastCompaction: null },
      // No call waits for a person's approval.
      awaiting: [],
      // Nothing waits in a held queue.
      heldUntil: null,
      position: ended,
      grants: [],
    });
  });

  it('a reply that calls wait runs the tool, and its result is in the next model request', async () => {
    const { client, model } = stack;
    const conversation = key('wait');
    await client.chat(conversation, { text: 'wait 300', id: 'w-1' });
    const turn = await answered(client, conversation, 'w-1');
    expect(turn.content).toBe('waiting for wait 300\n\nafter waited 300 ms: wait 300');
    const asked = requestsAbout(model.requests, 'wait 300');
    expect(asked).toHaveLength(2);
    expect(toolResults(asked[1]).map((r) => r.content)).toEqual(['waited 300 ms']);
  });

  it('two conversations run at once: one is answered while the other waits for its model reply', async () => {
    const { client, model } = stack;
    const slow = key('slow');
    const quick = key('quick');
    const gate = gateName('slow');
    await client.chat(slow, { text: `hold gate:${gate}`, id: 'slow-1' });
    await started(client, slow, 'slow-1');
    await model.gate(gate).reached();
    await client.chat(quick, { text: 'quick one', id: 'quick-1' });
    const quickTurn = await answered(client, quick, 'quick-1');
    expect(quickTurn.content).toBe('answer to quick one');
    expect((await client.turnOf(slow, 'slow-1')).status).toBe('running');
    model.gate(gate).open();
    const slowTurn = await answered(client, slow, 'slow-1');
    expect(Date.parse(quickTurn.endedAt!)).toBeLessThan(Date.parse(slowTurn.endedAt!));
  });

  it('inputs to one conversation are answered in order, and later turns see the earlier ones', async () => {
    const { client, http, model } = stack;
    const conversation = key('order');
    for (const n of [1, 2, 3]) expect((await http.post(conversation, '/chat', { text: `number ${n}`, id: `n-${n}` })).status).toBe(202);
    const turns = [];
    for (const n of [1, 2, 3]) turns.push(await answered(client, conversation, `n-${n}`));
    for (let i = 1; i < turns.length; i++) expect(Date.parse(turns[i].startedAt)).toBeGreaterThanOrEqual(Date.parse(turns[i - 1].endedAt!));
    const third = requestsAbout(model.requests, 'number 3');
    expect(third).toHaveLength(1);
    expect(third[0].body.messages.slice(1)).toEqual([
      { role: 'user', content: 'number 1' },
      { role: 'assistant', content: 'answer to number 1' },
      { role: 'user', content: 'number 2' },
      { role: 'assistant', content: 'answer to number 2' },
      { role: 'user', content: 'number 3' },
    ]);
  });

  it('the same input id sent twice is answered once', async () => {
    const { client, http, model } = stack;
    const conversation = key('twice');
    const first = await http.post(conversation, '/chat', { text: 'only once' }, { 'idempotency-key': 'once-1' });
    const again = await http.post(conversation, '/chat', { text: 'only once', id: 'once-1' });
    expect(first.body.id).toBe('once-1');
    expect(again.status).toBe(202);
    expect(again.body.id).toBe('once-1');
    await answered(client, conversation, 'once-1');
    const late = await http.post(conversation, '/chat', { text: 'only once', id: 'once-1' });
    expect(late.status).toBe(202);
    await client.chat(conversation, { text: 'after it', id: 'once-2' });
    await answered(client, conversation, 'once-2');
    expect(requestsAbout(model.requests, 'only once')).toHaveLength(1);
    const transcript = await client.messages(conversation);
    expect(transcript.items.filter((m) => m.text === 'only once')).toHaveLength(1);
  });

  it('the same id with another text is refused with 422 once the first was accepted', async () => {
    const { client, http } = stack;
    const conversation = key('reused');
    await client.chat(conversation, { text: 'first text', id: 'r-1' });
    await answered(client, conversation, 'r-1');
    const reused = await http.post(conversation, '/chat', { text: 'other text', id: 'r-1' });
    expect(reused.status).toBe(422);
    expect(reused.body.error?.code).toBe('id_reused');
  });

  it('malformed requests get 400 with a JSON error, and nothing is enqueued', async () => {
    const { client, http } = stack;
    const conversation = key('bad');
    const answers = [
      await http.post(conversation, '/chat', '{"text": '),
      await http.post(conversation, '/chat', { text: 42 }),
      await http.post(conversation, '/chat', { text: '   ' }),
      await http.post(conversation, '/chat', { text: 'a', messages: ['b'] }),
      await http.post('bad key!', '/chat', { text: 'hi' }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'bad_request', message: expect.any(String) });
    }
    const tooLong = await http.post(conversation, '/chat', { text: 'x'.repeat(9000) });
    expect(tooLong.status).toBe(413);
    // A chat sent after the bad ones is the first input the conversation ever had.
    await client.chat(conversation, { text: 'good one', id: 'good-1' });
    await answered(client, conversation, 'good-1');
    const transcript = await client.messages(conversation);
    expect(transcript.items.map((m) => m.text)).toEqual(['good one', 'answer to good one']);
  });
});
