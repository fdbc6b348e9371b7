import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserText, messageText, reply, type ModelRequest, type Script } from '@rudder/scripted-model';
import { readEvents, type SseMessage } from './sse';
import { answered, started, startStack, type Stack } from './stack';
import { gateName, requestsWith, testScript } from './scripts';

/**
 * Output guards (SPEC § Time and agents) on the team's worker app (test/agents/worker.ts): its
 * `checked` agent asks again for an answer that says `rude` and blocks one that says
 * `forbidden`. The model's rejected answers carry REJECTED, which no person may see: not in a
 * token, an event or a transcript row.
 */
const REJECTED = 'REJECTED-TEXT-7f3a';
const REASKED = 'Your answer was not accepted';

/** The re-ask message of the request, if the model has not answered it yet in this request. */
function pendingReask(request: ModelRequest): string | undefined {
  const messages = request.body.messages;
  const at = messages.findLastIndex((m) => m.role === 'user' && messageText(m).startsWith(REASKED));
  return at >= 0 && !messages.slice(at + 1).some((m) => m.role === 'assistant') ? messageText(messages[at]) : undefined;
}

/**
 * `say rude …` is answered with a rude answer (held at `first-gate:<name>`), its re-ask with a
 * polite one (held at `reask-gate:<name>`, which the re-ask's message quotes from the prompt);
 * `say forbidden …` with a forbidden answer; anything else as the system tests' script does.
 * Each answer streams word by word, so a token of it would reach a stream before its commit.
 */
const script: Script = (request) => {
  const reask = pendingReask(request);
  if (reask !== undefined) return reply.text('a polite answer, checked', { gate: /reask-gate:(\S+)/.exec(reask)?.[1], tokenDelayMs: 5 });
  const text = lastUserText(request);
  if (text.startsWith('say rude')) return reply.text(`a rude answer ${REJECTED}`, { gate: /first-gate:(\S+)/.exec(text)?.[1], tokenDelayMs: 5 });
  if (text.startsWith('say forbidden')) return reply.text(`a forbidden answer ${REJECTED}`, { tokenDelayMs: 5 });
  return testScript(request);
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

const key = (name: string) => `output-guards/${name}-${Math.random().toString(36).slice(2, 8)}`;
const tokenText = (read: SseMessage[]) => read.filter((m) => m.event === 'token').map((m) => (m.data as { text: string }).text).join('');
const assistantRows = async (conversation: string) => (await stack.client.messages(conversation)).items.filter((m) => m.role === 'assistant');

describe('output guards', () => {
  it('a re-ask answers once, with the passing answer; the rejected one reaches no stream, transcript or turn', async () => {
    const { client, http, model } = stack;
    const conversation = key('reask');
    const stream = await http.events(conversation);
    expect(stream.status).toBe(200);
    // The whole turn: until it ended and the passing answer's tokens are in (two topics, no order between them).
    const reading = readEvents(stream, (_, read) => read.some((m) => m.event === 'turn.ended') && tokenText(read).includes('a polite answer, checked'));
    await client.chat(conversation, { text: 'say rude things', id: 'p1', agent: 'checked' });
    const messages = await reading;

    const turn = await answered(client, conversation, 'p1');
    expect(turn).toMatchObject({ status: 'completed', outcome: null, content: 'a polite answer, checked' });
    // Asked twice: the prompt, then the re-ask carrying the rejected answer and the feedback about the prompt.
    const asked = requestsWith(model.requests, 'say rude things');
    expect(asked).toHaveLength(2);
    expect(asked[1].body.messages.slice(-3).map((m) => [m.role, messageText(m)])).toEqual([
      ['user', 'say rude things'],
      ['assistant', `a rude answer ${REJECTED}`],
      ['user', expect.stringMatching(/be polite[\s\S]*say rude things/)],
    ]);
    expect((await assistantRows(conversation)).map((m) => m.text)).toEqual(['a polite answer, checked']);

    const stored = messages.filter((m) => m.event !== 'token').map((m) => m.event);
    expect(stored).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'answer.rejected', 'model.replied', 'turn.ended']);
    // The rejection is on the stream with the guard's feedback, without the rejected answer.
    expect(messages.find((m) => m.event === 'answer.rejected')?.data).toMatchObject({ data: { step: 0, feedback: 'be polite', reask: 1 } });
    expect(tokenText(messages)).toBe('a polite answer, checked');
    expect(JSON.stringify(messages)).not.toContain(REJECTED);
  });

  it("a block answers refused with its message, the turn's answer; the rejected one reaches no stream, transcript, turn or later request", async () => {
    const { client, http } = stack;
    const conversation = key('block');
    const stream = await http.events(conversation);
    const reading = readEvents(stream, (m) => m.event === 'turn.ended');
    await client.chat(conversation, { text: 'say forbidden things', id: 'p1', agent: 'checked' });
    const messages = await reading;

    expect(await answered(client, conversation, 'p1')).toMatchObject({ status: 'refused', outcome: 'I cannot help with that.', content: 'I cannot help with that.' });
    // The block's message is the turn's answer in the transcript.
    expect((await assistantRows(conversation)).map((m) => m.text)).toEqual(['I cannot help with that.']);
    expect(messages.map((m) => m.event)).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'answer.rejected', 'turn.ended']);
    expect(JSON.stringify(messages)).not.toContain(REJECTED);
    // A later turn sees the block's message as the answer, never the rejected one.
    await client.chat(conversation, { text: 'and now?', id: 'p2' });
    expect(await answered(client, conversation, 'p2')).toMatchObject({ status: 'completed' });
    const later = requestsWith(stack.model.requests, 'and now?');
    expect(later).toHaveLength(1);
    expect(later[0].body.messages.slice(-3).map((m) => [m.role, messageText(m)])).toEqual([
      ['user', 'say forbidden things'],
      ['assistant', 'I cannot help with that.'],
      ['user', 'and now?'],
    ]);
    expect(JSON.stringify(later[0].body.messages)).not.toContain(REJECTED);
  });

  it('a steer sent while the re-ask is asked is taken once and is in the next request once; the re-ask quotes the prompt, not the steer', async () => {
    const { client, model } = stack;
    const conversation = key('steer-during-reask');
    const gate = gateName('reask');
    const prompt = `say rude reask-gate:${gate}`;
    await client.chat(conversation, { text: prompt, id: 'p1', agent: 'checked' });
    await started(client, conversation, 'p1');
    const reask = await model.gate(gate).reached();
    const steer = 'also mention the weather';
    expect(await client.steer(conversation, { text: steer, id: 's1' })).toMatchObject({ landed: true });
    model.gate(gate).open();

    const turn = await answered(client, conversation, 'p1');
    expect(turn).toMatchObject({ status: 'completed', steered: [{ id: 's1', text: steer }] });
    expect(turn.content).toBe(`a polite answer, checked\n\nanswer to ${steer}`);
    // The re-ask asked about the prompt; the steer came after, once.
    expect(messageText(reask.body.messages.at(-1))).toMatch(new RegExp(`be polite[\\s\\S]*${prompt}`));
    expect(JSON.stringify(reask.body.messages)).not.toContain(steer);
    const withSteer = requestsWith(model.requests, steer);
    expect(withSteer).toHaveLength(1);
    expect(withSteer[0].body.messages.filter((m) => messageText(m) === steer)).toHaveLength(1);
    expect((await stack.client.messages(conversation)).items.filter((m) => m.text === steer)).toHaveLength(1);
    expect(JSON.stringify((await stack.client.messages(conversation)).items)).not.toContain(REJECTED);
  });

  it('a steer that lands while the rejected answer is written is taken at the rejection, once, after the re-ask, which quotes the prompt', async () => {
    const { client, model } = stack;
    const conversation = key('steer-before-reask');
    const gate = gateName('first');
    const prompt = `say rude first-gate:${gate}`;
    await client.chat(conversation, { text: prompt, id: 'p1', agent: 'checked' });
    await model.gate(gate).reached();
    const steer = 'and keep it short';
    expect(await client.steer(conversation, { text: steer, id: 's1' })).toMatchObject({ landed: true });
    model.gate(gate).open();

    const turn = await answered(client, conversation, 'p1');
    expect(turn).toMatchObject({ status: 'completed', content: 'a polite answer, checked', steered: [{ id: 's1', text: steer }] });
    const withSteer = requestsWith(model.requests, steer);
    expect(withSteer).toHaveLength(1);
    expect(withSteer[0].body.messages.slice(-3).map((m) => [m.role, messageText(m)])).toEqual([
      ['assistant', `a rude answer ${REJECTED}`],
      ['user', expect.stringMatching(new RegExp(`be polite[\\s\\S]*${prompt}`))],
      ['user', steer],
    ]);
    const rows = (await stack.client.messages(conversation)).items;
    expect(rows.map((m) => [m.role, m.text])).toEqual([
      ['user', prompt],
      ['user', steer],
      ['assistant', 'a polite answer, checked'],
    ]);
  });

  it('through the Responses door, a blocked answer is a completed response whose message is a refusal; the rejected one is in no event of its stream', async () => {
    const openai = new OpenAI({ baseURL: `${stack.gatewayUrl}/v1`, apiKey: 'any', maxRetries: 0 });
    const refusal = { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] };
    const response = await openai.responses.create({ model: 'checked', input: 'say forbidden words' });
    expect(response).toMatchObject({ status: 'completed', error: null, output: [refusal] });
    expect(response.output_text).toBe('');

    const events: { type: string }[] = [];
    for await (const event of await openai.responses.create({ model: 'checked', input: 'say forbidden things again', stream: true })) events.push(event);
    const types = events.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['response.content_part.added', 'response.refusal.delta', 'response.refusal.done', 'response.output_item.done', 'response.completed']));
    expect(types).not.toContain('response.output_text.delta');
    expect(events.find((e) => e.type === 'response.refusal.done')).toMatchObject({ refusal: 'I cannot help with that.' });
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { status: 'completed', output: [refusal] } });
    expect(JSON.stringify(events)).not.toContain(REJECTED);
  });

  it('a worker killed (SIGKILL) right after the rejection is stored: the next one asks again once, and the turn answers once with the passing answer', async () => {
    const { client, model } = stack;
    const conversation = key('crash');
    await stack.stopWorkers();
    const doomed = await stack.startWorker({ CRASH_AT: 'after-answer-rejected' });
    const text = 'say rude things, then crash';
    await client.chat(conversation, { text, id: 'p1', agent: 'checked' });
    await doomed.exited;
    expect(doomed.child.signalCode).toBe('SIGKILL');
    expect(doomed.output()).toContain('crashing at after-answer-rejected');
    await stack.startWorker();
    const turn = await answered(client, conversation, 'p1', 60_000);
    expect(turn).toMatchObject({ status: 'completed', outcome: null, content: 'a polite answer, checked' });
    // The prompt was asked once (its rude answer stored as rejected), the re-ask once, by the next worker.
    const asked = requestsWith(model.requests, text);
    expect(asked.map((r) => pendingReask(r) !== undefined)).toEqual([false, true]);
    expect((await assistantRows(conversation)).map((m) => m.text)).toEqual(['a polite answer, checked']);
    const stored = (await readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended')).filter((m) => m.event !== 'token');
    expect(stored.map((m) => m.event)).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'answer.rejected', 'model.replied', 'turn.ended']);
    expect(JSON.stringify(stored)).not.toContain(REJECTED);
  });
});
