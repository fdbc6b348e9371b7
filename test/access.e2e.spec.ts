import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from './client';
import { startStack, type Stack } from './stack';
import { testScript } from './scripts';

/** Who may write is decided by the worker, in the conversation's log, together with the input. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob' } });
});
afterAll(() => stack?.stop());


describe('access decided with the input', () => {
  it("right after alice's first chat answered 202, bob can neither chat nor steer her conversation (looped)", async () => {
    const alice = createClient(stack.gatewayUrl, 'alice-token');
    const bob = createClient(stack.gatewayUrl, 'bob-token');
    for (let round = 0; round < 8; round++) {
      const conversation = `access/race-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const first = await alice.chat(conversation, { text: 'wait 300', id: `a-${round}` });
      expect(first.status).toBe(202);
      const [steer, chat] = await Promise.all([
        bob.steer(conversation, { text: 'bob steers', id: `b-s-${round}` }),
        bob.chat(conversation, { text: 'bob chats', id: `b-c-${round}` }),
      ]);
      expect([steer.status, chat.status], JSON.stringify([steer.body, chat.body])).toEqual([403, 403]);
      expect(steer.body).toMatchObject({ error: { code: 'forbidden' } });
      const turn = await alice.answered(conversation, `a-${round}`);
      expect(turn.steered).toEqual([]);
      expect(stack.model.requests.some((r) => JSON.stringify(r.body).includes('bob '))).toBe(false);
    }
  });
});
