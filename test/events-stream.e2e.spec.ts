import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvents, type SseMessage } from './sse';
import { answered, startStack, type Stack } from './stack';
import { testScript } from './scripts';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

describe('the event stream (SSE)', () => {
  it('streams a turn as it happens: started, tokens, the tool, ended — each stored event once, with its position as id', async () => {
    const { client, http } = stack;
    const conversation = `sse/live-${Date.now()}`;
    const stream = await http.events(conversation);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    // Until the turn ended and its tokens are in: a step's events reach the stream from the
    // commit's announcement, its tokens from agent.tokens (best effort; two topics, no order between
    // them), so the last step's tokens may come after `turn.ended`.
    const tokenText = (read: SseMessage[]) => read.filter((m) => m.event === 'token').map((m) => (m.data as { text: string }).text).join('');
    const reading = readEvents(stream, (_, read) => read.some((m) => m.event === 'turn.ended') && tokenText(read).includes('after waited 200 ms'));
    await client.chat(conversation, { text: 'wait 200', id: 'sse-1' });
    const messages = await reading;

    const stored = messages.filter((m) => m.event !== 'token');
    expect(stored.map((m) => m.event)).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'model.replied', 'tool.started', 'tool.ended', 'model.replied', 'turn.ended']);
    const positions = stored.map((m) => Number(m.id));
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(new Set(positions).size).toBe(positions.length);
    expect(tokenText(messages)).toContain('after waited 200 ms');
    expect(stored.at(-1)?.data).toMatchObject({ type: 'turn.ended', data: { status: 'completed', steered: [] } });
  });

  it('resumes after Last-Event-ID with exactly the events that came after it, and the tokens of a turn that ended moments ago', async () => {
    const { client, http } = stack;
    const conversation = `sse/resume-${Date.now()}`;
    await client.chat(conversation, { text: 'resume me', id: 'sse-2' });
    await answered(client, conversation, 'sse-2');
    // The gateway keeps a turn's tokens for a minute after it ended: a bare position resumes the
    // ones that followed it (read until they are all in: agent.tokens may reach the gateway
    // after agent.events, two topics have no order between them).
    const tokenText = (messages: SseMessage[]) => messages.filter((m) => m.event === 'token').map((m) => (m.data as { text: string }).text).join('');
    const all = await readEvents(
      await http.events(conversation, { 'last-event-id': '0' }),
      (_, read) => read.some((m) => m.event === 'turn.ended') && tokenText(read) === 'answer to resume me',
    );
    const stored = all.filter((m) => m.event !== 'token');
    expect(stored.map((m) => m.event)).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'model.replied', 'turn.ended']);
    expect(tokenText(all)).toBe('answer to resume me');

    const resumed = await readEvents(await http.events(conversation, { 'last-event-id': stored[1].id! }), (m) => m.event === 'turn.ended');
    expect(resumed.filter((m) => m.event !== 'token').map((m) => m.id)).toEqual(stored.slice(2).map((m) => m.id));
  });
});
