import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { requestsAbout, testScript } from './scripts';
import { answered, WAIT, startStack, type Stack } from './stack';

/**
 * A worker's memory follows the conversations in use (#13): a conversation idle for
 * WORKER_IDLE_FORGET_MS is let go, and its next input is answered from its log as before.
 */
let stack: Stack;
let metricsUrl: string;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
  const worker = await stack.startWorker({ METRICS_PORT: '0', WORKER_IDLE_FORGET_MS: '200' });
  const served = worker.output().split('\n').find((line) => line.includes('"metrics served"'))!;
  metricsUrl = (JSON.parse(served) as { url: string }).url;
});
afterAll(() => stack?.stop());

const held = async () => {
  const text = await (await fetch(metricsUrl)).text();
  return Number(/^rudder_conversations_held(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1]);
};

describe('idle conversations', () => {
  it('an idle conversation is let go, and its next turn still sees every earlier one', async () => {
    const { client, http, model } = stack;
    const conversation = `idle/${Math.random().toString(36).slice(2, 8)}`;
    expect((await http.post(conversation, '/chat', { text: 'first', id: 'i-1' })).status).toBe(202);
    await answered(client, conversation, 'i-1');
    await vi.waitFor(async () => expect(await held()).toBe(0), WAIT);

    expect((await http.post(conversation, '/chat', { text: 'second', id: 'i-2' })).status).toBe(202);
    await answered(client, conversation, 'i-2');
    const [second] = requestsAbout(model.requests, 'second');
    expect(second.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'answer to first' },
      { role: 'user', content: 'second' },
    ]);
    await vi.waitFor(async () => expect(await held()).toBe(0), WAIT);
  });
});
