import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Harness } from '../../../../../test/support/gateway/harness';

/** The turn each conversation runs, as the fake worker decides stops (the real one: under the lock, from the log). */
const runningTurn = new Map<string, string>();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' });
  h.worker = (input) => {
    if (input.type !== 'stop') return undefined;
    const running = runningTurn.get(input.conversation) ?? null;
    const meant = input.turn === undefined || input.turn === running;
    return [conversationEvent(input.conversation, 'stop.requested', { stop: input.id, turn: meant ? running : null, mode: 'stop' })];
  };
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const stopPath = (key: string) => `/v1/conversations/${encodeURIComponent(key)}/stop`;
const uniqueKey = (name: string) => `stop-test/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('POST /v1/conversations/{key}/stop', () => {
  it("a stop is produced once as a StopInputV1 and answers 202 with the turn the worker stopped", async () => {
    const key = uniqueKey('running');
    h.companion.setStatus(key, { owner: 'alice' });
    runningTurn.set(key, 't-7');
    let answer: Awaited<ReturnType<Harness['call']>> | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await h.call(stopPath(key), { body: {}, headers: alice });
    });
    expect(answer?.status).toBe(202);
    expect(answer?.body).toEqual({ turn: 't-7' });
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({
      v: 1,
      type: 'stop',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      conversation: key,
      subject: 'alice',
      discardPending: false,
      sentAt: expect.any(String),
    });
  });

  it('discardPending: true is passed on the stop, for the worker to discard every pending input', async () => {
    const key = uniqueKey('discard');
    h.companion.setStatus(key, { owner: 'alice', queue: [{ id: 'q-1', kind: 'chat', text: 'later' }] });
    let answer: Awaited<ReturnType<Harness['call']>> | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await h.call(stopPath(key), { body: { discardPending: true }, headers: alice });
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 202, body: { turn: null } });
    expect(produced.map((r) => ({ key: r.key, type: r.value.type, discardPending: (r.value as { discardPending?: boolean }).discardPending }))).toEqual([
      { key, type: 'stop', discardPending: true },
    ]);
  });

  it('a stop when no turn runs answers turn null, and a request without a body is the same as {}', async () => {
    const key = uniqueKey('idle');
    let answers: Awaited<ReturnType<Harness['call']>>[] = [];
    const produced = await h.producedDuring(async () => {
      answers = [await h.call(stopPath(key), { body: {}, headers: alice }), await h.call(stopPath(key), { method: 'POST', headers: alice })];
    });
    expect(answers.map((a) => ({ status: a.status, body: a.body }))).toEqual([
      { status: 202, body: { turn: null } },
      { status: 202, body: { turn: null } },
    ]);
    // Each stop is its own input, with its own id.
    expect(produced.map((r) => r.value.type)).toEqual(['stop', 'stop']);
    expect(new Set(produced.map((r) => r.value.id)).size).toBe(2);
  });

  it('a stop naming a turn answers that turn while it runs, and null (nothing stopped) once another runs', async () => {
    const key = uniqueKey('named');
    h.companion.setStatus(key, { owner: 'alice' });
    runningTurn.set(key, 't-2');
    const stale = await h.call(stopPath(key), { body: { turn: 't-1' }, headers: alice });
    expect({ status: stale.status, body: stale.body }).toEqual({ status: 202, body: { turn: null } });
    const meant = await h.call(stopPath(key), { body: { turn: 't-2' }, headers: alice });
    expect({ status: meant.status, body: meant.body }).toEqual({ status: 202, body: { turn: 't-2' } });
    expect((await h.inputOf(key, 'stop')).turn).toBe('t-1');
  });

  it('bad requests are 400/401/403 with a JSON error, and nothing is produced', async () => {
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob', running: { turn: 't-1', startedAt: new Date().toISOString() } });
    const key = uniqueKey('bad');
    const cases: { name: string; path?: string; body?: unknown; headers?: Record<string, string>; auth?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', body: {}, auth: {}, status: 401, code: 'unauthorized' },
      { name: 'an unknown token', body: {}, auth: { authorization: 'Bearer nope' }, status: 401, code: 'unauthorized' },
      { name: 'malformed JSON', body: '{', status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { now: true }, status: 400, code: 'bad_request' },
      { name: 'discardPending not a boolean', body: { discardPending: 'yes' }, status: 400, code: 'bad_request' },
      { name: 'a turn holding NUL', body: { turn: 't\u0000' }, status: 400, code: 'bad_request' },
      { name: 'a turn of 201 characters', body: { turn: 'x'.repeat(201) }, status: 400, code: 'bad_request' },
      { name: 'an array', body: [], status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: stopPath('bad key!'), body: {}, status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: stopPath(bobs), body: {}, status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? stopPath(key), { body: c.body, headers: { ...(c.auth ?? alice), ...c.headers } });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
      }
    });
    expect(produced).toEqual([]);
  });
});
