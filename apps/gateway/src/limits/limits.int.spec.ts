import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { acceptEverything, startHarness, type Harness } from '../../../../test/support/gateway/harness';
import { readsConversation } from '../http/route';
import { ROUTES } from '../routes';

let h: Harness;
/** The gateway's clock (`GatewayOptions.now`): it moves only when a test moves it, so no bucket refills while a request is slow. */
let now = Date.now();
beforeAll(async () => {
  h = await startHarness(
    {
      AUTH_TOKENS: 'tok-alice=alice,tok-bob=bob,tok-carol=carol',
      LIMIT_INPUTS_PER_SECOND: '0.5',
      LIMIT_INPUTS_BURST: '3',
      LIMIT_STREAMS_PER_SUBJECT: '2',
    },
    { now: () => now },
  );
  h.worker = acceptEverything;
});
afterAll(() => h?.stop());

const as = (subject: string) => ({ authorization: `Bearer tok-${subject}` });
const path = (key: string, rest = '') => `/v1/conversations/${encodeURIComponent(key)}${rest}`;
const uniqueKey = (name: string) => `limits-test/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('limits per subject', () => {
  it('a subject past its inputs per second gets 429 rate_limited with Retry-After, nothing of it is enqueued, and others are unaffected', async () => {
    const key = uniqueKey('rate');
    const bobKey = uniqueKey('bob');
    const produced = await h.producedDuring(async () => {
      for (let i = 1; i <= 3; i++) {
        expect((await h.call(path(key, '/chat'), { body: { text: `hi ${i}`, id: `rate-${i}` }, headers: as('alice') })).status).toBe(202);
      }
      const over = await h.call(path(key, '/chat'), { body: { text: 'one too many', id: 'rate-4' }, headers: as('alice') });
      expect(over.status).toBe(429);
      // The clock stood still: the bucket is empty, and one input comes back in 1 / 0.5 s.
      expect(over.headers.get('retry-after')).toBe('2');
      expect(over.headers.get('content-type')).toMatch(/^application\/json/);
      expect(over.body).toEqual({ error: { code: 'rate_limited', message: expect.stringMatching(/alice sends more than 0.5 inputs per second/), details: { limit: 'inputs', retryAfter: 2 } } });
      // Every kind of input counts against the same rate.
      expect((await h.call(path(key, '/steer'), { body: { text: 'steer', id: 'rate-5' }, headers: as('alice') })).status).toBe(429);
      expect((await h.call(path(key, '/stop'), { body: {}, headers: as('alice') })).status).toBe(429);
      // An edit of a waiting input is an input too.
      expect((await h.call(path(key, '/inputs/rate-1'), { method: 'PATCH', body: { text: 'edited', id: 'rate-edit' }, headers: as('alice') })).status).toBe(429);
      // Reads are not inputs (the companion's view shows alice's chats: she owns the conversation).
      h.companion.setStatus(key, { owner: 'alice' });
      expect((await h.call(path(key), { headers: as('alice') })).status).toBe(200);
      expect((await h.call(path(bobKey, '/chat'), { body: { text: 'bob is fine', id: 'bob-1' }, headers: as('bob') })).status).toBe(202);
    });
    expect(produced.map((record) => record.value.id)).toEqual(['rate-1', 'rate-2', 'rate-3', 'bob-1']);
    now += 2000; // one input back at 0.5 per second, and only one
    expect((await h.call(path(key, '/chat'), { body: { text: 'later', id: 'rate-6' }, headers: as('alice') })).status).toBe(202);
    expect((await h.call(path(key, '/chat'), { body: { text: 'later again', id: 'rate-7' }, headers: as('alice') })).status).toBe(429);
  });

  it('a subject holding its most event streams gets 429 for one more; closing one frees its slot; others are unaffected', async () => {
    const key = uniqueKey('streams');
    const open = (subject: string) => {
      const controller = new AbortController();
      return fetch(`${h.gateway.url}${path(key, '/events')}`, { headers: as(subject), signal: controller.signal }).then((response) => ({
        response,
        close: () => controller.abort(),
      }));
    };
    const first = await open('carol');
    const second = await open('carol');
    expect([first.response.status, second.response.status]).toEqual([200, 200]);
    const third = await h.call(path(key, '/events'), { headers: as('carol') });
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('5');
    expect(third.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 'streams' } });
    const bobs = await open('bob');
    expect(bobs.response.status).toBe(200);
    first.close();
    const again = await vi.waitFor(async () => {
      const opened = await open('carol');
      if (opened.response.status !== 200) await opened.response.body?.cancel();
      expect(opened.response.status).toBe(200);
      return opened;
    }, { timeout: 15_000, interval: 50 });
    for (const stream of [second, bobs, again]) stream.close();
  });
});

describe('reads per subject', () => {
  it('a subject past its reads per second gets 429 rate_limited with Retry-After, before the companion is asked; others and its inputs are unaffected', async () => {
    const reads = await startHarness({ AUTH_TOKENS: 'tok-alice=alice,tok-bob=bob', LIMIT_READS_PER_SECOND: '0.5', LIMIT_READS_BURST: '3' }, { now: () => now });
    reads.worker = acceptEverything;
    try {
      const key = uniqueKey('reads');
      reads.companion.setStatus(key, { owner: 'alice', grants: [{ subject: 'bob', access: 'read' }] });
      const read = (subject: string, rest = '') => reads.call(path(key, rest), { headers: as(subject) });
      expect([(await read('alice')).status, (await read('alice', '/messages')).status, (await read('alice', '/turns/t-1')).status]).not.toContain(429);
      const asked = reads.companion.requests.length;
      const over = await read('alice');
      expect(over.status).toBe(429);
      expect(over.headers.get('retry-after')).toBe('2');
      expect(over.body).toEqual({ error: { code: 'rate_limited', message: expect.stringMatching(/alice sends more than 0.5 reads per second/), details: { limit: 'reads', retryAfter: 2 } } });
      expect((await read('alice', '/messages')).status).toBe(429);
      expect((await read('alice', '/events')).status).toBe(429);
      // Every read the route table names (`readsConversation`) is counted, whatever its route; no other route is.
      const readRoutes = Object.keys(ROUTES).filter((id) => readsConversation(ROUTES[id]));
      expect(readRoutes).toEqual(expect.arrayContaining(['status', 'messages', 'turn', 'turnOf', 'followups', 'todos', 'recap', 'events', 'retrieveResponse']));
      expect(readRoutes.every((id) => ROUTES[id].method === 'get')).toBe(true);
      for (const id of readRoutes) {
        const url = ROUTES[id].path.replace('{key}', encodeURIComponent(key)).replace('{turn}', 't-1').replace('{id}', 'resp_limits');
        expect((await reads.call(url, { headers: as('alice') })).status, `${id} (${url}) past the read rate`).toBe(429);
      }
      expect(reads.companion.requests.length, 'a refused read asks the companion nothing').toBe(asked);
      expect((await read('bob')).status).toBe(200);
      expect((await reads.call(path(key, '/chat'), { body: { text: 'writes have their own rate' }, headers: as('alice') })).status).toBe(202);
      now += 2000; // one read back at 0.5 per second
      expect((await read('alice')).status).toBe(200);
      expect((await read('alice')).status).toBe(429);
    } finally {
      await reads.stop();
    }
  });
});

describe('limits left unset', () => {
  /** Sends `count` chats to one conversation, ten at a time; returns their statuses. */
  const chats = async (harness: Harness, count: number, headers: Record<string, string>) => {
    const key = uniqueKey('unset');
    const statuses: number[] = [];
    for (let from = 0; from < count; from += 10) {
      const batch = Array.from({ length: Math.min(10, count - from) }, (_, i) =>
        harness.call(path(key, '/chat'), { body: { text: `hi ${from + i}`, id: `unset-${from + i}` }, headers }).then((r) => r.status),
      );
      statuses.push(...(await Promise.all(batch)));
    }
    return statuses;
  };
  const counts = (statuses: number[]) => statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

  it('in open development mode there are none: every request is the one subject anonymous, so a limit would cap every client together', async () => {
    const open = await startHarness({}, { now: () => now });
    open.worker = acceptEverything;
    try {
      // Past the authenticated default's burst (100) with the clock standing still: no bucket refills.
      expect(counts(await chats(open, 130, {}))).toEqual({ 202: 130 });
      // Past the authenticated default of 32 streams at once.
      const key = uniqueKey('open-streams');
      const streams = Array.from({ length: 36 }, () => new AbortController());
      const opened = await Promise.all(streams.map((c) => fetch(`${open.gateway.url}${path(key, '/events')}`, { signal: c.signal })));
      expect(counts(opened.map((r) => r.status))).toEqual({ 200: 36 });
      for (const c of streams) c.abort();
    } finally {
      await open.stop();
    }
  });

  it('where requests are authenticated they are 50 inputs a second in bursts of 100 per subject', async () => {
    const authenticated = await startHarness({ AUTH_TOKENS: 'tok-alice=alice' }, { now: () => now });
    authenticated.worker = acceptEverything;
    try {
      expect(counts(await chats(authenticated, 110, as('alice')))).toEqual({ 202: 100, 429: 10 });
    } finally {
      await authenticated.stop();
    }
  });
});
