import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createKafka } from '@rudder/runtime';
import { startHarness, turnStarted, type Harness } from '../../../../test/support/gateway/harness';
import { sseReader } from '../../../../test/support/gateway/sse-reader';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

const uniqueKey = (name: string) => `events-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
/** Opens a stream; once `fetch` resolves the headers are in, so the stream is subscribed. */
async function open(key: string, headers: Record<string, string> = {}, query = '') {
  const response = await fetch(`${h.gateway.url}/v1/conversations/${encodeURIComponent(key)}/events${query}`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return sseReader(response);
}

describe('GET /v1/conversations/{key}/events', () => {
  it('an event on agent.events reaches the streams of its conversation as id: position, event: type, data: the record', async () => {
    const key = uniqueKey('live');
    const stream = await open(key);
    const event = turnStarted(key, 101);
    await h.publishEvents([turnStarted(uniqueKey('other'), 100), event]);
    expect(await stream.next()).toEqual({ id: '101', event: 'turn.started', data: event });
    expect(await stream.quietFor(300)).toEqual([]);
    await stream.close();
  });

  it('tokens are sent as event: token with {turn, step, text} and id <position>.<offset>', async () => {
    const key = uniqueKey('tokens');
    const stream = await open(key);
    await h.publishEvents([turnStarted(key, 61)]);
    expect((await stream.next()).id).toBe('61');
    await h.publishTokens([{ v: 1, conversation: key, turn: 't-1', step: 0, text: 'Hel' }]);
    const token = await stream.next();
    expect(token).toMatchObject({ event: 'token', data: { turn: 't-1', step: 0, text: 'Hel' } });
    expect(token.id).toMatch(/^61\.\d+$/);
    await stream.close();
  });

  it("a token's id resumes both kinds: the events after its position and the tokens after its offset, each once", async () => {
    const key = uniqueKey('token-resume');
    const first = await open(key);
    await h.publishEvents([turnStarted(key, 71)]);
    expect((await first.next()).id).toBe('71');
    const piece = (text: string) => ({ v: 1 as const, conversation: key, turn: 't-1', step: 0, text });
    await h.publishTokens([piece('a')]);
    const a = await first.next();
    await first.close();
    // While the client is away: more tokens, a stored event, a token after it (each seen by
    // the gateway before the next is sent: two topics have no order between them).
    const watcher = await open(key);
    await h.publishTokens([piece('b')]);
    expect((await watcher.next()).data).toMatchObject({ text: 'b' });
    await h.publishEvents([turnStarted(key, 72)]);
    expect((await watcher.next()).id).toBe('72');
    await h.publishTokens([piece('c')]);
    expect((await watcher.next()).data).toMatchObject({ text: 'c' });
    await watcher.close();
    const resumed = await open(key, { 'last-event-id': a.id! });
    const got = [await resumed.next(), await resumed.next(), await resumed.next()];
    expect(got.map((m) => (m.event === 'token' ? (m.data as { text: string }).text : m.id))).toEqual(['b', '72', 'c']);
    expect(await resumed.quietFor(300)).toEqual([]);
    await resumed.close();
    // A bare position (a stored event came last) gets the tokens that followed it.
    const afterEvent = await open(key, { 'last-event-id': '72' });
    expect((await afterEvent.next()).data).toMatchObject({ text: 'c' });
    expect(await afterEvent.quietFor(300)).toEqual([]);
    await afterEvent.close();
  });

  it('an event the relay publishes twice is sent once', async () => {
    const key = uniqueKey('twice');
    const stream = await open(key);
    await h.publishEvents([turnStarted(key, 201), turnStarted(key, 201), turnStarted(key, 202)]);
    expect((await stream.next()).id).toBe('201');
    expect((await stream.next()).id).toBe('202');
    expect(await stream.quietFor(300)).toEqual([]);
    await stream.close();
  });

  it('with Last-Event-ID it replays the stored events after it, then goes live, each position once', async () => {
    const key = uniqueKey('resume');
    h.companion.addEvents(key, [turnStarted(key, 10), turnStarted(key, 20), turnStarted(key, 30)]);
    const stream = await open(key, { 'last-event-id': '10' });
    expect((await stream.next()).id).toBe('20');
    expect((await stream.next()).id).toBe('30');
    // The live copy of a stored event, then a new one.
    await h.publishEvents([turnStarted(key, 30), turnStarted(key, 40)]);
    expect((await stream.next()).id).toBe('40');
    expect(await stream.quietFor(300)).toEqual([]);
    await stream.close();
    expect(h.companion.requests).toContain(`/conversations/${encodeURIComponent(key)}/events?after=10&limit=500`);
  });

  it('?after= resumes like Last-Event-ID, and the header wins when both are given', async () => {
    const key = uniqueKey('after');
    h.companion.addEvents(key, [turnStarted(key, 1), turnStarted(key, 2), turnStarted(key, 3)]);
    const byQuery = await open(key, {}, '?after=1');
    expect((await byQuery.next()).id).toBe('2');
    await byQuery.close();
    const both = await open(key, { 'last-event-id': '2' }, '?after=0');
    expect((await both.next()).id).toBe('3');
    expect(await both.quietFor(200)).toEqual([]);
    await both.close();
  });

  it('an event seen live but not yet stored by the companion is still replayed to a resuming client', async () => {
    const key = uniqueKey('recent');
    const watcher = await open(key);
    await h.publishEvents([turnStarted(key, 501)]);
    expect((await watcher.next()).id).toBe('501'); // the gateway has consumed it
    await watcher.close();
    // The companion (stub) has stored nothing for this conversation.
    const resumed = await open(key, { 'last-event-id': '500' });
    expect((await resumed.next()).id).toBe('501');
    await resumed.close();
  });

  it('a bad Last-Event-ID or after is 400 JSON, and a companion in trouble during the replay is 503 JSON', async () => {
    const base = `${h.gateway.url}/v1/conversations/${encodeURIComponent(uniqueKey('bad'))}/events`;
    for (const [url, headers] of [
      [base, { 'last-event-id': 'abc' }],
      [`${base}?after=-1`, {}],
    ] as const) {
      const response = await fetch(url, { headers });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('bad_request');
    }
    h.companion.failing = true;
    try {
      const response = await fetch(base, { headers: { 'last-event-id': '3' } });
      expect(response.status).toBe(503);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unavailable');
    } finally {
      h.companion.failing = false;
    }
  });

  it('stopping the gateway ends its open streams', async () => {
    const own = await startHarness();
    const response = await fetch(`${own.gateway.url}/v1/conversations/x/events`);
    const stream = sseReader(response);
    await own.stop();
    await expect(stream.next(5000)).rejects.toThrow('the stream ended');
  });
});

describe("the gateway's live consumer", () => {
  /**
   * A group with no offsets starts at the end when it joins: a consumer kafkajs replaced
   * before the first periodic commit (the broker killed right after a partition's first
   * records) started at the end again, after what was published while it was away, and the
   * streams open across it never got that (CI, infrastructure-faults "the Kafka broker killed").
   */
  it('has the topics’ ends as its offsets from the start, before any record came, so a replaced consumer resumes there', async () => {
    const own = await startHarness();
    const admin = createKafka(inject('kafkaBrokers'), 'events-test').admin();
    await admin.connect();
    try {
      const namespace = own.topics.events.slice(0, -'agent.events'.length);
      const { groups } = await admin.listGroups();
      const gateway = groups.filter((g) => g.groupId.startsWith(`${namespace}gateway-`));
      expect(gateway, "the gateway's group").toHaveLength(1);
      // Both topics are empty: their end is offset 0 (-1 is "nothing committed"). Committed at
      // the group's join, which may come a moment after the gateway is up.
      await vi.waitFor(async () => {
        const committed = await admin.fetchOffsets({ groupId: gateway[0].groupId, topics: [own.topics.events, own.topics.tokens] });
        expect(committed.map((t) => ({ topic: t.topic, offsets: t.partitions.map((p) => p.offset) }))).toEqual([
          { topic: own.topics.events, offsets: ['0'] },
          { topic: own.topics.tokens, offsets: ['0'] },
        ]);
      }, { timeout: 20_000, interval: 100 });
    } finally {
      await admin.disconnect();
      await own.stop();
    }
  });

  /**
   * What streams and writes wait for comes first by announcement; the records are the fallback,
   * fetched in batches (`RECORDS_BATCHED_MS`) so that a turn's every commit does not wake the
   * broker and the gateway. Records published a few milliseconds apart, each acknowledged before
   * the next is sent, reach the stream together: two arriving within 2 ms of each other came in
   * one fetch (fetched one by one they come at least a produce's round trip and the pause apart).
   */
  it('fetches records in batches, carried in order', async () => {
    const key = uniqueKey('batched');
    const stream = await open(key);
    const count = 10;
    const arrivals: { id: string | undefined; at: number }[] = [];
    const reading = (async () => {
      for (let i = 0; i < count; i++) arrivals.push({ id: (await stream.next()).id, at: performance.now() });
    })();
    for (let i = 0; i < count; i++) {
      await h.publishEvents([turnStarted(key, 300 + i)]);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await reading;
    await stream.close();
    expect(arrivals.map((a) => a.id)).toEqual(Array.from({ length: count }, (_, i) => String(300 + i)));
    const together = arrivals.slice(1).filter((a, i) => a.at - arrivals[i].at < 2).length;
    expect(together, `arrival gaps ${arrivals.slice(1).map((a, i) => (a.at - arrivals[i].at).toFixed(1)).join(' ')} ms`).toBeGreaterThanOrEqual(count / 2);
  });
});
