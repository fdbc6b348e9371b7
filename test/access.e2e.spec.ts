import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { createClient } from './client';
import { requestsWith, testScript } from './scripts';
import { startStack, type Stack } from './stack';

/**
 * SPEC "Access and consistency" and the HTTP API's tokens, with AUTH_TOKENS set, on the real
 * stack. Who may write is decided by the worker, in the conversation's log, together with the input.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob' } });
});
afterAll(() => stack?.stop());

const key = (name: string) => `access/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('with AUTH_TOKENS set', () => {
  it('no token or an unknown one is 401, on reads and writes alike, and nothing is enqueued', async () => {
    const conversation = key('tokens');
    for (const client of [createClient(stack.gatewayUrl), createClient(stack.gatewayUrl, 'mallory-token')]) {
      expect((await client.chat(conversation, { text: 'hello', id: 'x' })).status).toBe(401);
      expect((await client.steer(conversation, { text: 'hello' })).status).toBe(401);
      expect((await client.status(conversation)).status).toBe(401);
      expect((await client.events(conversation)).status).toBe(401);
    }
    const alice = createClient(stack.gatewayUrl, 'alice-token');
    expect((await alice.status(conversation)).body).toMatchObject({ queue: [], steering: [], lastInputId: null });
  });

  it('the first writer owns the conversation: another subject may neither read nor write it (403), and a steer is a write', async () => {
    const conversation = key('owned');
    const alice = createClient(stack.gatewayUrl, 'alice-token');
    const bob = createClient(stack.gatewayUrl, 'bob-token');
    expect((await alice.chat(conversation, { text: 'my trip', id: 'a1' })).status).toBe(202);
    // Her turn ended, so every read sees her as the owner (the writes right after the 202: below).
    const turn = await alice.answered(conversation, 'a1');

    expect((await bob.status(conversation)).status).toBe(403);
    expect((await bob.messages(conversation)).status).toBe(403);
    expect((await bob.turn(conversation, turn.id)).status).toBe(403);
    expect((await bob.turnOf(conversation, 'a1')).status).toBe(403);
    expect((await bob.events(conversation)).status).toBe(403);
    const writes = [
      await bob.chat(conversation, { text: 'bob was here', id: 'b1' }),
      await bob.steer(conversation, { text: 'bob steers', id: 'b2' }),
      await bob.stop(conversation),
      await bob.retract(conversation, 'a1'),
      await bob.promote(conversation, 'a1'),
    ];
    expect(writes.map((w) => [w.status, w.body.error?.code])).toEqual(Array(5).fill([403, 'forbidden']));

    // Nothing of bob's entered: alice's conversation is as she left it, and the model never saw him.
    await alice.chat(conversation, { text: 'still mine', id: 'a2' });
    await alice.answered(conversation, 'a2');
    expect((await alice.messages(conversation)).body.items.map((m) => m.text)).toEqual(['my trip', 'answer to my trip', 'still mine', 'answer to still mine']);
    expect((await alice.status(conversation)).body.lastInputId).toBe('a2');
    expect(requestsWith(stack.model.requests, 'bob was here')).toEqual([]);
    expect(requestsWith(stack.model.requests, 'bob steers')).toEqual([]);
  });

  it('a subject the owner granted read may read but not steer; granted write may steer; revoked, neither; only the owner grants', async () => {
    const conversation = key('grants');
    const alice = createClient(stack.gatewayUrl, 'alice-token');
    const bob = createClient(stack.gatewayUrl, 'bob-token');
    expect((await alice.chat(conversation, { text: 'my trip', id: 'g1' })).status).toBe(202);
    await alice.answered(conversation, 'g1');
    expect((await bob.grant(conversation, 'bob', 'write')).status).toBe(403);

    expect((await alice.grant(conversation, 'bob', 'read')).body).toEqual({ subject: 'bob', access: 'read' });
    await vi.waitFor(async () => expect((await bob.status(conversation)).status).toBe(200));
    expect((await bob.messages(conversation)).status).toBe(200);
    expect((await bob.steer(conversation, { text: 'bob steers', id: 'gb1' })).status).toBe(403);
    expect((await alice.status(conversation)).body.grants).toEqual([{ subject: 'bob', access: 'read' }]);
    expect((await bob.status(conversation)).body.grants).toBeUndefined();

    expect((await alice.grant(conversation, 'bob', 'write')).body).toEqual({ subject: 'bob', access: 'write' });
    const chat = await bob.chat(conversation, { text: 'bob chats', id: 'gb2' });
    expect(chat.status).toBe(202);
    expect((await bob.answered(conversation, 'gb2')).content).toBe('answer to bob chats');

    expect((await alice.revoke(conversation, 'bob')).body).toEqual({ subject: 'bob', access: null });
    // Right after the revocation's 200, the worker refuses bob's writes (the gateway's early check may lag).
    expect((await bob.chat(conversation, { text: 'bob again', id: 'gb3' })).status).toBe(403);
    await vi.waitFor(async () => expect((await bob.status(conversation)).status).toBe(403));
    expect(stack.model.requests.some((r) => JSON.stringify(r.body).includes('bob again') || JSON.stringify(r.body).includes('bob steers'))).toBe(false);
  });
});

describe('access decided with the input', () => {
  it("right after alice's first chat answered 202, bob can neither chat, steer, stop, read nor stream her conversation (looped)", async () => {
    const alice = createClient(stack.gatewayUrl, 'alice-token');
    const bob = createClient(stack.gatewayUrl, 'bob-token');
    for (let round = 0; round < 8; round++) {
      const conversation = `access/race-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const first = await alice.chat(conversation, { text: 'wait 300', id: `a-${round}` });
      expect(first.status).toBe(202);
      const [steer, chat, stop, status, messages, events] = await Promise.all([
        bob.steer(conversation, { text: 'bob steers in the race', id: `b-s-${round}` }),
        bob.chat(conversation, { text: 'bob chats in the race', id: `b-c-${round}` }),
        bob.stop(conversation, {}),
        bob.status(conversation),
        bob.messages(conversation),
        bob.events(conversation),
      ]);
      await events.body?.cancel();
      const statuses = [steer.status, chat.status, stop.status, status.status, messages.status, events.status];
      expect(statuses, JSON.stringify([steer.body, chat.body, stop.body, status.body])).toEqual([403, 403, 403, 403, 403, 403]);
      expect(steer.body).toMatchObject({ error: { code: 'forbidden' } });
      const turn = await alice.answered(conversation, `a-${round}`);
      expect(turn).toMatchObject({ status: 'completed', steered: [] });
      expect(stack.model.requests.some((r) => JSON.stringify(r.body).includes('in the race'))).toBe(false);
    }
  });
});

describe('start-up', () => {
  const startAndCapture = async (env: Record<string, string>) => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const gateway = await startGateway(readConfig({ ...stack.env, ...env, GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
      await gateway.stop();
    } finally {
      spy.mockRestore();
    }
    return written.join('');
  };

  it('without AUTH_TOKENS the gateway says loudly that it runs in open development mode, and with them it does not', async () => {
    const loud = (await startAndCapture({ AUTH_TOKENS: '' })).split('\n').find((line) => line.includes('OPEN DEVELOPMENT MODE'));
    expect(JSON.parse(loud!)).toMatchObject({ level: 'warn', service: 'gateway', msg: expect.stringMatching(/^!!! AUTH_TOKENS.* unset: OPEN DEVELOPMENT MODE.*"anonymous"/) });
    expect(await startAndCapture({ AUTH_TOKENS: 'alice-token=alice' })).not.toContain('OPEN DEVELOPMENT MODE');
  });

  it('in open mode every request is the subject "anonymous": no token is needed', async () => {
    const gateway = await startGateway(readConfig({ ...stack.env, AUTH_TOKENS: '', GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
    try {
      const open = createClient(gateway.url);
      const conversation = key('open');
      expect((await open.chat(conversation, { text: 'no token', id: 'o1' })).status).toBe(202);
      expect((await open.answered(conversation, 'o1')).content).toBe('answer to no token');
    } finally {
      await gateway.stop();
    }
  });
});
