import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CONTEXT } from '@rudder/contracts';
import { acceptEverything, startHarness, type Harness } from '../../../../test/support/gateway/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' });
  h.worker = acceptEverything;
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const bob = { authorization: 'Bearer tok-bob' };
const path = (key: string, rest = '') => `/v1/conversations/${encodeURIComponent(key)}${rest}`;
const uniqueKey = (name: string) => `auth-test/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('authentication and ownership with AUTH_TOKENS set', () => {
  it('no token, an unknown token or another scheme is 401, before anything else is looked at', async () => {
    const key = uniqueKey('anon');
    const refused: Record<string, string>[] = [
      {},
      { authorization: 'Bearer nope' },
      { authorization: 'Basic dG9rLWFsaWNlOg==' },
      { authorization: 'tok-alice' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const headers of refused) {
        const chat = await h.call(path(key, '/chat'), { body: { text: 'hi', id: 'anon-1' }, headers });
        expect(chat.status).toBe(401);
        expect(chat.body.error.code).toBe('unauthorized');
        expect(chat.headers.get('www-authenticate')).toBe('Bearer');
        expect((await h.call(path(key), { headers })).status).toBe(401);
        expect((await h.call(path(key, '/events'), { headers })).status).toBe(401);
      }
      // A bad key does not tell an unauthenticated caller anything: still 401, not 400.
      expect((await h.call(path('bad key!', '/chat'), { body: { text: 'hi' } })).status).toBe(401);
    });
    expect(produced).toEqual([]);
  });

  it('a chat to a new conversation is written as the token subject', async () => {
    const key = uniqueKey('new');
    const answer = await h.call(path(key, '/chat'), { body: { text: 'hello', id: 'alice-1' }, headers: alice });
    expect(answer.status).toBe(202);
    expect((await h.inputArrived('alice-1')).value.subject).toBe('alice');
  });

  it("a chat to another subject's conversation is 403 forbidden, and nothing is enqueued", async () => {
    const key = uniqueKey('bobs');
    h.companion.setStatus(key, { owner: 'bob' });
    const produced = await h.producedDuring(async () => {
      const answer = await h.call(path(key, '/chat'), { body: { text: 'let me in', id: 'intruder-1' }, headers: alice });
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('forbidden');
      expect((await h.call(path(key, '/chat'), { body: { text: 'mine', id: 'bob-1' }, headers: bob })).status).toBe(202);
    });
    expect(produced.map((r) => ({ id: r.value.id, subject: r.value.subject }))).toEqual([{ id: 'bob-1', subject: 'bob' }]);
  });

  it("reading another subject's conversation is 403: status, messages, turns, events", async () => {
    const key = uniqueKey('private');
    h.companion.setStatus(key, { owner: 'bob' });
    for (const rest of ['', '/messages', '/turns/t-1', '/turns?input=i-1', '/events', '/events?after=3']) {
      const answer = await h.call(path(key, rest), { headers: alice });
      expect({ rest, status: answer.status, code: answer.body?.error?.code }).toEqual({ rest, status: 403, code: 'forbidden' });
    }
  });

  it('the owner reads their conversation, and the status never shows the owner', async () => {
    const key = uniqueKey('own');
    h.companion.setStatus(key, { owner: 'bob', lastInputId: 'bob-9' });
    const status = await h.call(path(key), { headers: bob });
    expect(status.status).toBe(200);
    expect(status.body).toEqual({ key, running: null, steering: [], queue: [], lastInputId: 'bob-9', agent: null, context: NO_CONTEXT, awaiting: [], heldUntil: null, position: 0, grants: [] });
    expect((await h.call(path(key, '/messages'), { headers: bob })).status).toBe(200);
  });
});
