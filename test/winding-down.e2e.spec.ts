import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsAbout, testScript } from './scripts';
import { readEvents } from './sse';
import { answered, startStack, type Stack } from './stack';

/**
 * SPEC "Winding down" on the real stack: a long tool (the default agent's `wait`,
 * which stops waiting when asked to wind down) sees `windDown` when the conversation asks the
 * running turn to finish early, returns what it has, and the turn ends at its next step keeping
 * it — `superseded` for an interrupting chat (SPEC, queue controls), `completed` for a graceful
 * stop (the model is asked once more) — marked `woundDown`, never cancelled.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const key = (name: string) => `wind-down/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** Sends `text` as a chat and resolves once its tool call has started (its `tool.started` is on the stream). */
async function toolRunning(conversation: string, id: string, text: string) {
  await stack.client.chat(conversation, { text, id });
  await readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'tool.started');
}

const toolResultsOf = async (conversation: string) =>
  (await readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended'))
    .filter((m) => m.event === 'tool.ended')
    .map((m) => (m.data as { data: { result: string } }).data.result);

describe('winding down', () => {
  it('a long tool winds down on an interrupting chat: it returns what it has, the turn ends superseded at that step keeping it, marked woundDown, and the chat runs next', async () => {
    const { client } = stack;
    const conversation = key('interrupt');
    const text = 'wait 500000';
    await toolRunning(conversation, 'long', text);
    await client.chat(conversation, { text: 'do this instead', id: 'i', onBusy: 'interrupt' });
    const wound = await answered(client, conversation, 'long', 30_000);
    expect(wound).toMatchObject({ status: 'superseded', woundDown: true, content: `waiting for ${text}` });
    // Not cancelled: the tool's partial result is stored, and the 600 s wait did not run out.
    const [result] = await toolResultsOf(conversation);
    expect(result).toMatch(/^waited \d+ ms of 500000, then wound down$/);
    expect(Number(/^waited (\d+)/.exec(result)![1])).toBeLessThan(30_000);
    const next = await answered(client, conversation, 'i');
    expect(next).toMatchObject({ status: 'completed', woundDown: false, content: 'answer to do this instead' });
    expect(Date.parse(next.startedAt)).toBeGreaterThanOrEqual(Date.parse(wound.endedAt!));
  });

  it('a graceful stop winds the tool down, asks the model once more with its partial result, and ends the turn completed, marked woundDown', async () => {
    const { client, model } = stack;
    const conversation = key('graceful');
    const text = 'wait 500001';
    await toolRunning(conversation, 'g', text);
    const stopped = await client.stop(conversation, { graceful: true });
    const turn = await answered(client, conversation, 'g', 30_000);
    expect(stopped.turn).toBe(turn.id);
    const [result] = await toolResultsOf(conversation);
    expect(result).toMatch(/^waited \d+ ms of 500001, then wound down$/);
    expect(turn).toMatchObject({ status: 'completed', woundDown: true, outcome: null, content: `waiting for ${text}\n\nafter ${result}: ${text}` });
    // Asked twice: the call, then its partial result.
    expect(requestsAbout(model.requests, text)).toHaveLength(2);
    // The conversation goes on as usual.
    await client.chat(conversation, { text: 'and now?', id: 'n' });
    expect(await answered(client, conversation, 'n')).toMatchObject({ status: 'completed', woundDown: false });
  });

  it('a plain stop still stops: the tool is cancelled, not wound down', async () => {
    const { client } = stack;
    const conversation = key('plain');
    await toolRunning(conversation, 's', 'wait 500002');
    await client.stop(conversation);
    expect(await answered(client, conversation, 's', 30_000)).toMatchObject({ status: 'stopped', woundDown: false });
    expect(await toolResultsOf(conversation)).toEqual(['not run to the end: the turn was stopped']);
  });
});
