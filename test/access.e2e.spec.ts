import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { requestsWith, testScript } from './scripts';
import { answered, callerOf, startStack, type Stack } from './stack';

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
    for (const { http } of [callerOf(stack.gatewayUrl), callerOf(stack.gatewayUrl, 'mallory-token')]) {
      expect((await http.post(conversation, '/chat', { text: 'hello', id: 'x' })).status).toBe(401);
      expect((await http.post(conversation, '/steer', { text: 'hello' })).status).toBe(401);
      expect((await http.get(conversation)).status).toBe(401);
      expect((await http.events(conversation)).status).toBe(401);
    }
    // Nothing was enqueued: the key is still one nobody has written to.
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    expect((await alice.http.get(conversation)).status).toBe(404);
  });

  it('the first writer owns the conversation: another subject may neither read nor write it (403), and a steer is a write', async () => {
    const conversation = key('owned');
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    expect((await alice.http.post(conversation, '/chat', { text: 'my trip', id: 'a1' })).status).toBe(202);
    // Her turn ended, so every read sees her as the owner (the writes right after the 202: below).
    const turn = await answered(alice.client, conversation, 'a1');

    expect((await bob.http.get(conversation)).status).toBe(403);
    expect((await bob.http.get(conversation, '/messages')).status).toBe(403);
    expect((await bob.http.get(conversation, `/turns/${turn.id}`)).status).toBe(403);
    expect((await bob.http.get(conversation, '/turns?input=a1')).status).toBe(403);
    expect((await bob.http.events(conversation)).status).toBe(403);
    const writes = [
      await bob.http.post(conversation, '/chat', { text: 'bob was here', id: 'b1' }),
      await bob.http.post(conversation, '/steer', { text: 'bob steers', id: 'b2' }),
      await bob.http.post(conversation, '/stop', {}),
      await bob.http.delete(conversation, '/inputs/a1'),
      await bob.http.post(conversation, '/inputs/a1/promote'),
    ];
    expect(writes.map((w) => [w.status, w.body.error?.code])).toEqual(Array(5).fill([403, 'forbidden']));

    // Nothing of bob's entered: alice's conversation is as she left it, and the model never saw him.
    await alice.client.chat(conversation, { text: 'still mine', id: 'a2' });
    await answered(alice.client, conversation, 'a2');
    expect((await alice.client.messages(conversation)).items.map((m) => m.text)).toEqual(['my trip', 'answer to my trip', 'still mine', 'answer to still mine']);
    expect((await alice.client.status(conversation)).lastInputId).toBe('a2');
    expect(requestsWith(stack.model.requests, 'bob was here')).toEqual([]);
    expect(requestsWith(stack.model.requests, 'bob steers')).toEqual([]);
  });

  it('a subject the owner granted read may read but not steer; granted write may steer; revoked, neither; only the owner grants', async () => {
    const conversation = key('grants');
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    expect((await alice.http.post(conversation, '/chat', { text: 'my trip', id: 'g1' })).status).toBe(202);
    await answered(alice.client, conversation, 'g1');
    expect((await bob.http.put(conversation, '/grants/bob', { access: 'write' })).status).toBe(403);
    // The owner's own access never changes: a grant to itself is refused, and listed nowhere.
    expect((await alice.http.put(conversation, '/grants/alice', { access: 'read' })).status).toBe(409);

    expect(await alice.client.grant(conversation, 'bob', 'read')).toEqual({ subject: 'bob', access: 'read' });
    await vi.waitFor(async () => expect((await bob.http.get(conversation)).status).toBe(200));
    expect((await bob.http.get(conversation, '/messages')).status).toBe(200);
    expect((await bob.http.post(conversation, '/steer', { text: 'bob steers', id: 'gb1' })).status).toBe(403);
    expect((await alice.client.status(conversation)).grants).toEqual([{ subject: 'bob', access: 'read' }]);
    expect((await bob.client.status(conversation)).grants).toBeUndefined();

    expect(await alice.client.grant(conversation, 'bob', 'write')).toEqual({ subject: 'bob', access: 'write' });
    const chat = await bob.http.post(conversation, '/chat', { text: 'bob chats', id: 'gb2' });
    expect(chat.status).toBe(202);
    expect((await answered(bob.client, conversation, 'gb2')).content).toBe('answer to bob chats');

    expect(await alice.client.revoke(conversation, 'bob')).toEqual({ subject: 'bob', access: null });
    // Right after the revocation's 200, the worker refuses bob's writes (the gateway's early check may lag).
    expect((await bob.http.post(conversation, '/chat', { text: 'bob again', id: 'gb3' })).status).toBe(403);
    await vi.waitFor(async () => expect((await bob.http.get(conversation)).status).toBe(403));
    expect(stack.model.requests.some((r) => JSON.stringify(r.body).includes('bob again') || JSON.stringify(r.body).includes('bob steers'))).toBe(false);
  });
});

describe('access decided with the input', () => {
  it("right after alice's first chat answered 202, bob can neither chat, steer, stop, read nor stream her conversation (looped)", async () => {
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bob = callerOf(stack.gatewayUrl, 'bob-token').http;
    for (let round = 0; round < 8; round++) {
      const conversation = `access/race-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const first = await alice.http.post(conversation, '/chat', { text: 'wait 300', id: `a-${round}` });
      expect(first.status).toBe(202);
      const [steer, chat, stop, status, messages, events] = await Promise.all([
        bob.post(conversation, '/steer', { text: 'bob steers in the race', id: `b-s-${round}` }),
        bob.post(conversation, '/chat', { text: 'bob chats in the race', id: `b-c-${round}` }),
        bob.post(conversation, '/stop', {}),
        bob.get(conversation),
        bob.get(conversation, '/messages'),
        bob.events(conversation),
      ]);
      await events.body?.cancel();
      const statuses = [steer.status, chat.status, stop.status, status.status, messages.status, events.status];
      expect(statuses, JSON.stringify([steer.body, chat.body, stop.body, status.body])).toEqual([403, 403, 403, 403, 403, 403]);
      expect(steer.body).toMatchObject({ error: { code: 'forbidden' } });
      const turn = await answered(alice.client, conversation, `a-${round}`);
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
      const open = callerOf(gateway.url);
      const conversation = key('open');
      expect((await open.http.post(conversation, '/chat', { text: 'no token', id: 'o1' })).status).toBe(202);
      expect((await answered(open.client, conversation, 'o1')).content).toBe('answer to no token');
    } finally {
      await gateway.stop();
    }
  });
});
