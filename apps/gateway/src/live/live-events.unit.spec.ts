import type { Announcement, ConversationEvent } from '@rudder/contracts';
import { createLog, readConfig } from '@rudder/runtime';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveEvents } from './live-events';
import { idsNamedBy } from './recent-events';

const config = readConfig({ KAFKA_NAMESPACE: 'spec.', KAFKA_BROKERS: '127.0.0.1:1', DATABASE_URL: 'postgres://unused' });
const log = createLog('spec', { level: 'silent' });
const at = '2026-01-01T00:00:00.000Z';
const prompt = (id: string) => ({ id, text: `text of ${id}` });

/** Events as the worker stores them; `position` is set when one is handed to the gateway. */
const accepted = (id: string, kind: 'chat' | 'steer' = 'chat') => ({
  type: 'input.accepted' as const,
  data: { input: { id, kind, text: `text of ${id}`, messages: [`text of ${id}`], subject: 'anonymous', sentAt: at }, ahead: 0 },
});
const started = (turn: string, id: string) => ({ type: 'turn.started' as const, data: { turn, prompt: prompt(id) } });

/** A LiveEvents fed by hand, as its consumer feeds it (the consumer itself is not started). */
function liveEvents(settings: Partial<typeof config> = {}) {
  const live = new LiveEvents({} as Kafka, { ...config, ...settings }, log);
  let position = 0;
  const give = (conversation: string, event: { type: string; data: unknown }) => {
    position += 1;
    const record = { v: 1, id: `e-${position}`, conversation, position, at, ...event };
    live['dispatch']('spec.agent.events', { value: Buffer.from(JSON.stringify(record)), offset: String(position) } as KafkaMessage);
    return position;
  };
  return { live, give };
}

/** As a request waits: the first event of `type` that names one of `ids` (what it sent). */
const firstOf = (live: LiveEvents, conversation: string, ids: string[], type: string) =>
  live.watch(conversation, ids, (event) => (event.type === type && idsNamedBy(event).some((id) => ids.includes(id)) ? event.position : undefined));

describe('LiveEvents: decisions seen before a request waits', () => {
  afterEach(() => vi.useRealTimers());

  it('finds a decision of the last minute by the id it names, in its conversation only', () => {
    const { live, give } = liveEvents();
    give('c', accepted('other'));
    const position = give('c', accepted('chat-1'));
    give('d', accepted('chat-1'));
    const watched = firstOf(live, 'c', ['chat-1'], 'input.accepted');
    expect(watched.seen).toBe(position);
    watched.cancel();
    const none = firstOf(live, 'c', ['chat-2'], 'input.accepted');
    expect(none.seen).toBeUndefined();
    none.cancel();
  });

  it('with several ids, gives the earliest event naming any of them', () => {
    const { live, give } = liveEvents();
    const first = give('c', { type: 'promote.refused', data: { promote: 'p-1', target: 'chat-1', code: 'delivered' } });
    give('c', { type: 'steer.accepted', data: { input: prompt('chat-1'), turn: 't', landed: true } });
    const watched = live.watch('c', ['chat-1', 'p-1'], (event) => event.position);
    expect(watched.seen).toBe(first);
    watched.cancel();
  });

  it('forgets what leaves the last minute, and what passes the 1,000 kept per conversation', () => {
    vi.useFakeTimers();
    const { live, give } = liveEvents();
    give('c', accepted('old'));
    vi.advanceTimersByTime(61_000);
    live['recent'].forgetSeenBefore(Date.now() - 60_000);
    const old = firstOf(live, 'c', ['old'], 'input.accepted');
    expect(old.seen).toBeUndefined();
    old.cancel();

    give('c', accepted('pushed-out'));
    for (let i = 0; i < 1000; i += 1) give('c', started(`t-${i}`, `chat-${i}`));
    const pushed = firstOf(live, 'c', ['pushed-out'], 'input.accepted');
    expect(pushed.seen).toBeUndefined();
    pushed.cancel();
    const kept = firstOf(live, 'c', ['chat-999'], 'turn.started');
    expect(kept.seen).toBe(1002);
    kept.cancel();
    expect(live['recent']['named'].size).toBe(1000);
  });

  it('keeps at most RECENT_EVENTS_BYTES of events across conversations, the oldest going first', () => {
    const { live, give } = liveEvents({ RECENT_EVENTS_BYTES: 2000 });
    const first = give('c', accepted('first'));
    for (let i = 0; i < 20; i += 1) give(i % 2 === 0 ? 'c' : 'd', accepted(`chat-${i}`));
    expect(live['recent']['bytes'].bytes).toBeGreaterThan(1000);
    expect(live['recent']['bytes'].bytes).toBeLessThanOrEqual(2000);
    const gone = firstOf(live, 'c', ['first'], 'input.accepted');
    expect(gone.seen).toBeUndefined();
    gone.cancel();
    // What is left of each conversation is its latest events, with no hole.
    const kept = live.recentAfter('c', first);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.at(-1)?.data).toMatchObject({ input: { id: 'chat-18' } });
    expect(kept.map((e) => e.position)).toEqual([...kept.map((e) => e.position)].sort((a, b) => a - b));
    const named = [...live['recent']['named'].values()].flat().length;
    expect(named).toBe(live.recentAfter('c', 0).length + live.recentAfter('d', 0).length);
    // Forgetting by age frees their bytes too.
    live['recent'].forgetSeenBefore(Date.now() + 1);
    expect(live['recent']['bytes'].bytes).toBe(0);
    expect(live.latestPosition('c')).toBeNull();
  });

  it('a decision arriving after the call is handed to the waiting request', async () => {
    const { live, give } = liveEvents();
    const watched = firstOf(live, 'c', ['chat-1'], 'input.accepted');
    expect(watched.seen).toBeUndefined();
    give('c', accepted('chat-0'));
    const position = give('c', accepted('chat-1'));
    await expect(watched.result).resolves.toBe(position);
    watched.cancel();
  });
});

describe('LiveEvents: an announced event is parsed once', () => {
  afterEach(() => vi.useRealTimers());

  const record = (id: string, position: number) => ({ v: 1, id, conversation: 'c', position, at, ...accepted(`chat-${id}`) }) as ConversationEvent;
  const deliver = (live: LiveEvents, event: ConversationEvent, headers: KafkaMessage['headers'] = { 'event-id': Buffer.from(event.id) }) =>
    live['dispatch']('spec.agent.events', { value: Buffer.from(JSON.stringify(event)), offset: String(event.position), headers } as KafkaMessage);

  it("its record (named by the relay's event-id header) hands out the announced event itself, and is forgotten", () => {
    const live = new LiveEvents({} as Kafka, config, log);
    const got: ConversationEvent[] = [];
    live.subscribe('c', { event: (e) => got.push(e), token: () => undefined, end: () => undefined });
    const announced = record('e-1', 1);
    live.noticed({ conversation: 'c', after: 0, events: [announced] } as Announcement, 400);
    deliver(live, JSON.parse(JSON.stringify(announced)) as ConversationEvent);
    expect(got).toHaveLength(1);
    expect(got[0]).toBe(announced); // the same object: the record was not parsed
    expect(live['announced'].size).toBe(0);

    // a record nobody announced, or without the header, is parsed as ever
    const other = record('e-2', 2);
    deliver(live, other);
    deliver(live, record('e-3', 3), undefined);
    expect(got.slice(1).map((e) => e.id)).toEqual(['e-2', 'e-3']);
    expect(got[1]).not.toBe(other);
    expect(got[1]).toEqual(other);
  });

  it('at most 4 MB of announcements wait for their records; the records of the others are parsed, and one taken makes room', () => {
    const live = new LiveEvents({} as Kafka, config, log);
    // Announcements of 7,900 characters (the largest a notification carries), one event each.
    for (let i = 1; i <= 600; i++) live.noticed({ conversation: 'c', after: i - 1, events: [record(`k-${i}`, i)] } as Announcement, 7900);
    const fit = Math.floor((4 * 1024 * 1024) / 7900);
    expect(live['announced'].size).toBe(fit);
    const got: ConversationEvent[] = [];
    live.subscribe('c', { event: (e) => got.push(e), token: () => undefined, end: () => undefined });
    const late = record('k-600', 600);
    deliver(live, late);
    expect(got[0]).not.toBe(late);
    expect(got[0]).toEqual(late); // parsed from its record
    deliver(live, record('k-1', 1));
    expect(live['announced'].size).toBe(fit - 1);
    live.noticed({ conversation: 'c', after: 600, events: [record('k-601', 601)] } as Announcement, 7900);
    expect(live['announced'].size).toBe(fit);
  });

  it('an announced event whose record never comes is let go at the second sweep, and its room with it', () => {
    const live = new LiveEvents({} as Kafka, config, log);
    live.noticed({ conversation: 'c', after: 0, events: [record('e-9', 9)] } as Announcement, 4 * 1024 * 1024);
    live['sweep'](Date.now());
    expect(live['announced'].size).toBe(1);
    live['sweep'](Date.now());
    expect(live['announced'].size).toBe(0);
    live.noticed({ conversation: 'c', after: 9, events: [record('e-10', 10)] } as Announcement, 4 * 1024 * 1024);
    expect(live['announced'].size).toBe(1);
  });

  it('what a stream may have carried ahead of the records is seen: the highest announced position until a record reaches it, or a minute', () => {
    const live = new LiveEvents({} as Kafka, config, log);
    deliver(live, record('e-1', 1));
    live.noticed({ conversation: 'c', after: 1, events: [record('e-2', 2), record('e-3', 3)] } as Announcement, 400);
    expect(live.latestPosition('c')).toBe(1);
    expect(live.seenPosition('c')).toBe(3);
    expect(live.seenPosition('d')).toBeNull();
    deliver(live, record('e-2', 2));
    expect(live.seenPosition('c')).toBe(3);
    deliver(live, record('e-3', 3));
    expect(live.seenPosition('c')).toBe(3);
    expect(live['announcedAhead'].size).toBe(0);

    live.noticed({ conversation: 'c', after: 3, events: [record('e-4', 4)] } as Announcement, 400);
    live['sweep'](Date.now() + 59_000);
    expect(live.seenPosition('c')).toBe(4);
    live['sweep'](Date.now() + 61_000);
    expect(live.seenPosition('c')).toBeNull(); // its record never came: the events seen live are forgotten too
  });
});

describe('LiveEvents: an announcement that answers a write', () => {
  const record = (id: string, position: number) => ({ v: 1, id, conversation: 'c', position, at, ...accepted(id) }) as ConversationEvent;

  it('answers the write before it feeds the streams; one that answers no write feeds them at once', async () => {
    const live = new LiveEvents({} as Kafka, config, log);
    const order: string[] = [];
    live.subscribe('c', { event: () => undefined, announced: (events) => order.push(`stream ${events[0].id}`), token: () => undefined, end: () => undefined });
    const write = firstOf(live, 'c', ['chat-1'], 'input.accepted');
    const answered = write.result.then((position) => order.push(`write answered at ${position}`));

    live.noticed({ conversation: 'c', after: 0, events: [record('chat-1', 1)] } as Announcement, 400);
    expect(order).toEqual([]); // the stream waits for the answer's microtasks
    await answered;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['write answered at 1', 'stream chat-1']);
    write.cancel();

    // A write that waits on, not answered by this one, does not hold the streams back.
    const other = firstOf(live, 'c', ['chat-9'], 'input.accepted');
    live.noticed({ conversation: 'c', after: 1, events: [record('chat-2', 2)] } as Announcement, 400);
    expect(order).toEqual(['write answered at 1', 'stream chat-1', 'stream chat-2']);
    other.cancel();
  });

  it('an announcement that comes while the streams wait for an answer is fed after the one before it', async () => {
    const live = new LiveEvents({} as Kafka, config, log);
    const order: string[] = [];
    live.subscribe('c', { event: () => undefined, announced: (events) => order.push(`stream ${events[0].id}`), token: () => undefined, end: () => undefined });
    const write = firstOf(live, 'c', ['chat-1'], 'input.accepted');
    live.noticed({ conversation: 'c', after: 0, events: [record('chat-1', 1)] } as Announcement, 400);
    live.noticed({ conversation: 'c', after: 1, events: [record('chat-2', 2)] } as Announcement, 400);
    expect(order).toEqual([]);
    await write.result;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['stream chat-1', 'stream chat-2']);
    write.cancel();
  });
});

describe('LiveEvents: a record that answers a write (its announcement missed or too large)', () => {
  it('answers the write before it feeds the streams, and what comes meanwhile is fed after it, in order', async () => {
    const { live, give } = liveEvents();
    const order: string[] = [];
    live.subscribe('c', { event: (event) => order.push(`stream ${event.position}`), token: () => undefined, end: () => undefined });
    const write = firstOf(live, 'c', ['chat-1'], 'input.accepted');
    const answered = write.result.then((position) => order.push(`write answered at ${position}`));
    give('c', accepted('chat-1'));
    give('c', started('t-1', 'chat-1'));
    expect(order).toEqual([]); // the streams wait for the answer's microtasks
    await answered;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['write answered at 1', 'stream 1', 'stream 2']);
    write.cancel();
    // One that answers no write feeds them at once.
    give('c', accepted('chat-2'));
    expect(order.at(-1)).toBe('stream 3');
  });
});

describe('idsNamedBy', () => {
  const event = (type: string, data: unknown) => ({ v: 1, id: 'e', conversation: 'c', position: 1, at, type, data }) as ConversationEvent;

  it('names the id of every request the gateway waits on a decision for', () => {
    expect(idsNamedBy(event('input.accepted', accepted('chat').data))).toEqual(['chat']);
    expect(idsNamedBy(event('input.rejected', { input: { id: 'chat', kind: 'chat', text: 'x' }, code: 'busy', message: 'm' }))).toEqual(['chat']);
    expect(idsNamedBy(event('steer.accepted', { input: prompt('steer'), turn: null, landed: false }))).toEqual(['steer']);
    expect(idsNamedBy(event('input.retracted', { input: accepted('chat').data.input, retract: 'r' }))).toEqual(['chat', 'r']);
    expect(idsNamedBy(event('retract.refused', { retract: 'r', target: null, code: 'not_found' }))).toEqual(['r']);
    expect(idsNamedBy(event('stop.requested', { stop: 's', turn: null, mode: 'stop' }))).toEqual(['s']);
    expect(idsNamedBy(event('stop.refused', { stop: 's', code: 'forbidden' }))).toEqual(['s']);
    expect(idsNamedBy(event('access.granted', { grant: 'g', subject: 'bob', access: 'read' }))).toEqual(['g']);
    expect(idsNamedBy(event('grant.refused', { grant: 'g', subject: 'bob', code: 'owner' }))).toEqual(['g']);
    expect(idsNamedBy(event('promote.refused', { promote: 'p', target: 'chat', code: 'delivered' }))).toEqual(['p']);
    expect(idsNamedBy(event('turn.started', { turn: 't', prompt: prompt('chat') }))).toEqual(['chat']);
    expect(idsNamedBy(event('tool.ended', { turn: 't', step: 0, callId: 'x', result: 'r' }))).toEqual([]);
  });
});
