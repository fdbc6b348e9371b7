import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { testScript } from './scripts';
import { sseMessages, type SseMessage } from './sse';
import { answered, callerOf, startStack, type Stack } from './stack';

/**
 * SPEC "Access and consistency", the read rule, on the real stack with AUTH_TOKENS set: reading
 * is checked where the data is. A stream carries an event only to a subject who may read the
 * conversation at that event's position, so a stream opened before the owner's first write
 * carries nothing of it, and a revoke closes the revoked subject's open streams; a key nobody
 * has written to has no status, messages or turns (404).
 *
 * Every spec here opens streams on keys nobody owns yet, which no earlier access test did.
 * How "carries nothing" is shown without waiting for a time: alice grants bob read access
 * afterwards, and the grant is the first thing bob's stream carries.
 */
let stack: Stack;
let second: RunningGateway;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob' } });
  second = await startGateway(readConfig({ ...stack.env, GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
});
afterAll(async () => {
  await second?.stop();
  await stack?.stop();
});

const key = (name: string) => `read-access/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** Reads a stream in the background: every message, and whether (and when) the stream ended. */
function follow(response: Response) {
  expect(response.status).toBe(200);
  const messages: SseMessage[] = [];
  const reader = sseMessages(response).getReader();
  let waiters: (() => void)[] = [];
  const state = { ended: false };
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        messages.push(value);
        waiters.forEach((w) => w());
      }
    } catch {
      // cancelled
    }
    state.ended = true;
    waiters.forEach((w) => w());
  })();
  const until = (check: () => boolean, what: string, timeoutMs = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: not within ${timeoutMs} ms; had ${JSON.stringify(messages.map((m) => m.event))}`)), timeoutMs);
      const look = () => {
        if (!check()) return;
        clearTimeout(timer);
        waiters = waiters.filter((w) => w !== look);
        resolve();
      };
      waiters.push(look);
      look();
    });
  return {
    messages,
    state,
    /** Resolves once a message of this type has come. */
    saw: (event: string) => until(() => messages.some((m) => m.event === event), `waiting for ${event}`),
    ended: () => until(() => state.ended, 'waiting for the stream to end'),
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

describe('a stream opened before the owner writes', () => {
  it("carries nothing of alice's conversation to bob, events or tokens, while alice's own stream carries all of it", async () => {
    const conversation = key('before');
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    const bobs = follow(await bob.http.events(conversation));
    const alices = follow(await alice.http.events(conversation));

    expect((await alice.http.post(conversation, '/chat', { text: 'my secret trip', id: 'a1' })).status).toBe(202);
    await answered(alice.client, conversation, 'a1');
    await alices.saw('turn.ended');
    expect(alices.messages.map((m) => m.event)).toEqual(expect.arrayContaining(['conversation.opened', 'input.accepted', 'turn.started', 'model.replied', 'turn.ended']));

    // The grant is an event of the log after everything above: bob's stream carries it first.
    await alice.client.grant(conversation, 'bob', 'read');
    await bobs.saw('access.granted');
    expect(bobs.messages.map((m) => m.event)).toEqual(['access.granted']);
    expect(JSON.stringify(bobs.messages)).not.toContain('secret');

    // From the grant on, bob reads what follows.
    await alice.client.chat(conversation, { text: 'a second one', id: 'a2' });
    await answered(alice.client, conversation, 'a2');
    await bobs.saw('turn.ended');
    expect(bobs.messages.filter((m) => m.event === 'input.accepted').map((m) => (m.data as { data: { input: { id: string } } }).data.input.id)).toEqual(['a2']);
    await Promise.all([bobs.cancel(), alices.cancel()]);
  });

  it('opened on another gateway at the first write while the companion has not folded it, it is refused 503 (never opened unauthorized), then 403', async () => {
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bobElsewhere = callerOf(second.url, 'bob-token');
    const conversation = key('elsewhere-held');
    // The companion's fold is held (its writes wait on this lock; reads go on): it cannot say who owns the key as of the write.
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE companion.conversations IN SHARE ROW EXCLUSIVE MODE');
      const chat = await alice.http.post(conversation, '/chat', { text: 'wait 200', id: 'held' });
      expect(chat.status).toBe(202);
      // Asked to be at least at the write, the door waits for the companion, then answers 503: it opens no stream it cannot authorize.
      const held = await bobElsewhere.http.events(conversation, { 'rudder-min-position': chat.headers.get('rudder-position')! });
      expect(held.status).toBe(503);
      expect(((await held.json()) as { error: { code: string } }).error.code).toBe('unavailable');
    } finally {
      await db.query('ROLLBACK');
      await db.end();
    }
    await answered(alice.client, conversation, 'held');
    const refused = await bobElsewhere.http.events(conversation);
    expect(refused.status).toBe(403);
    await refused.body?.cancel();
  });

  it('opened on another gateway right after the first write, it carries nothing either (looped)', async () => {
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    const bobElsewhere = callerOf(second.url, 'bob-token');
    for (let round = 0; round < 5; round++) {
      const conversation = key(`elsewhere-${round}`);
      expect((await alice.http.post(conversation, '/chat', { text: 'wait 200', id: `a-${round}` })).status).toBe(202);
      const response = await bobElsewhere.http.events(conversation);
      if (response.status === 403) {
        // The companion had folded alice's first write already: refused at the door.
        await response.body?.cancel();
        continue;
      }
      const bobs = follow(response);
      await answered(alice.client, conversation, `a-${round}`);
      await alice.client.grant(conversation, 'bob', 'read');
      await bobs.saw('access.granted');
      expect(bobs.messages.map((m) => m.event)).toEqual(['access.granted']);
      await bobs.cancel();
    }
  });

  it('a key nobody has written to has no status, messages or turns (404), for anyone', async () => {
    const conversation = key('nobody');
    for (const { http } of [callerOf(stack.gatewayUrl, 'alice-token'), callerOf(stack.gatewayUrl, 'bob-token')]) {
      const answers = [await http.get(conversation), await http.get(conversation, '/messages'), await http.get(conversation, '/turns/t-1'), await http.get(conversation, '/turns?input=x')];
      expect(answers.map((a) => [a.status, a.body.error?.code])).toEqual(Array(4).fill([404, 'not_found']));
      // Its stream may be opened (the web chat opens it before its first chat).
      const stream = await http.events(conversation);
      expect(stream.status).toBe(200);
      await stream.body?.cancel();
    }
  });
});

describe('a revoke', () => {
  it("ends the revoked subject's open streams, on every gateway, and they carry nothing after it", async () => {
    const conversation = key('revoke');
    const alice = callerOf(stack.gatewayUrl, 'alice-token');
    await alice.client.chat(conversation, { text: 'shared for a while', id: 'r1' });
    await answered(alice.client, conversation, 'r1');
    await alice.client.grant(conversation, 'bob', 'read');
    const here = follow(await callerOf(stack.gatewayUrl, 'bob-token').http.events(conversation, { 'last-event-id': '0' }));
    const there = follow(await callerOf(second.url, 'bob-token').http.events(conversation, { 'last-event-id': '0' }));
    await Promise.all([here.saw('access.granted'), there.saw('access.granted')]);
    const alices = follow(await alice.http.events(conversation));

    await alice.client.revoke(conversation, 'bob');
    await Promise.all([here.ended(), there.ended()]);
    for (const stream of [here, there]) {
      expect(stream.messages.filter((m) => m.event === 'access.granted')).toHaveLength(1);
      expect(stream.messages.some((m) => m.event === 'access.granted' && (m.data as { data: { access: unknown } }).data.access === null)).toBe(false);
    }
    // alice's stream goes on: it carries her revoke, and what follows.
    await alice.client.chat(conversation, { text: 'mine again', id: 'r2' });
    await answered(alice.client, conversation, 'r2');
    await alices.saw('turn.ended');
    expect(alices.state.ended).toBe(false);
    expect(here.messages.some((m) => JSON.stringify(m.data).includes('mine again'))).toBe(false);
    await alices.cancel();
  });
});
