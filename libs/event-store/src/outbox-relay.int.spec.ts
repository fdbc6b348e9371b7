import { describe, expect, it, vi } from 'vitest';
import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { createLog } from '@rudder/runtime';
import { appendToConversations } from './append-to-conversations';
import { takePartitions } from './fencing';
import { createOutboxRelay } from './outbox-relay';
import { plainRules, useEventStoreDatabase } from './testing';

const db = useEventStoreDatabase();

const chat = (id: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: id, messages: [id], subject: 's', sentAt: '2026-11-30T00:00:00.000Z' } },
});
const unpublished = async () =>
  Number((await db.pool().query<{ n: string }>('SELECT count(*) AS n FROM event_store.outbox')).rows[0].n);

describe('the outbox relay', () => {
  it('never skips a row still committing: a row committed after a later one is published by the next sweep, in order per conversation', async () => {
    const epochs = await takePartitions(db.pool(), [0], 'relay-test');
    const published: ConversationEvent[] = [];
    const relay = createOutboxRelay({ pool: db.pool(), publish: async (events) => void published.push(...events), ownedPartitions: () => [0], log: createLog('test') });
    await appendToConversations(db.pool(), plainRules, 0, epochs, [{ conversation: 'a', probe: [] }, { conversation: 'b', probe: [] }], (c) => [chat(`${c}-0`)]);
    relay.sweep();
    await relay.idle();

    // A writer takes a position for conversation `a` (and moves its last_position, as every
    // write does in the statement that appends) and holds its transaction open…
    const slow = await db.pool().connect();
    await slow.query('BEGIN');
    await slow.query(
      `WITH e AS (INSERT INTO event_store.events (id, conversation, type, data, once_key)
                  VALUES (gen_random_uuid(), 'a', 'input.accepted', $1, 'input:a-slow') RETURNING position)
       UPDATE event_store.conversations SET last_position = (SELECT position FROM e) WHERE key = 'a'`,
      [JSON.stringify(chat('a-slow').data)],
    );
    // …while a later position of conversation `b` commits and is swept.
    await appendToConversations(db.pool(), plainRules, 0, epochs, [{ conversation: 'b', probe: [] }], () => [chat('b-1')]);
    relay.sweep();
    await relay.idle();
    expect(published.map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['a-0', 'b-0', 'b-1']);

    await slow.query('COMMIT');
    slow.release();
    relay.sweep();
    await relay.idle();
    expect(published.map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['a-0', 'b-0', 'b-1', 'a-slow']);
    expect(await unpublished()).toBe(0);
    await relay.stop();
  });

  it('a publication that fails is retried from the table, in order, before anything newer', async () => {
    const epochs = await takePartitions(db.pool(), [1], 'relay-test');
    const published: string[] = [];
    let failing = true;
    const relay = createOutboxRelay({
      pool: db.pool(),
      publish: async (events) => {
        if (failing) throw new Error('broker away');
        published.push(...events.map((e) => (e.type === 'input.accepted' ? e.data.input.id : e.type)));
      },
      ownedPartitions: () => [1],
      log: createLog('test'),
      retryMs: 50,
    });
    relay.sweep();
    await relay.idle();
    const first = await appendToConversations(db.pool(), plainRules, 1, epochs, [{ conversation: 'c', probe: [] }], () => [chat('c-0')]);
    relay.enqueue(first);
    await relay.idle();
    failing = false;
    const second = await appendToConversations(db.pool(), plainRules, 1, epochs, [{ conversation: 'c', probe: [] }], () => [chat('c-1')]);
    relay.enqueue(second);
    // The retry comes from a timer (retryMs): wait for what it publishes, not for a time.
    await vi.waitFor(() => expect(published.filter((id) => id.startsWith('c-'))).toEqual(['c-0', 'c-1']));
    await relay.idle();
    expect(published.filter((id) => id.startsWith('c-'))).toEqual(['c-0', 'c-1']);
    await vi.waitFor(async () => {
      const { rows } = await db.pool().query(`SELECT count(*)::int AS n FROM event_store.outbox WHERE conversation = 'c'`);
      expect(rows[0].n).toBe(0);
    });
    await relay.stop();
  });

  it('publishes a conversation in log order, every event, whatever order commits are enqueued in, or if one never is', async () => {
    const epochs = await takePartitions(db.pool(), [2], 'relay-test');
    const published: string[] = [];
    const relay = createOutboxRelay({
      pool: db.pool(),
      publish: async (events) => void published.push(...events.map((e) => (e.type === 'input.accepted' ? e.data.input.id : e.type))),
      ownedPartitions: () => [2],
      log: createLog('test'),
    });
    await relay.idle();
    const write = (id: string) => appendToConversations(db.pool(), plainRules, 2, epochs, [{ conversation: 'd', probe: [] }], () => [chat(id)]);
    // d-0 commits, but its enqueue is late (a slow dead-letter send in between): d-1 is enqueued first.
    const late = await write('d-0');
    relay.enqueue(await write('d-1'));
    relay.enqueue(late);
    await relay.idle();
    // d-2 commits and is never enqueued (its COMMIT's acknowledgement was lost); d-3 is.
    await write('d-2');
    relay.enqueue(await write('d-3'));
    await relay.idle();
    expect(published.filter((id) => id.startsWith('d-'))).toEqual(['d-0', 'd-1', 'd-2', 'd-3']);
    await relay.stop();
  });

  it('publishes a commit that follows what it published as it is, reading nothing, and marks what it published in one statement, later', async () => {
    const epochs = await takePartitions(db.pool(), [3], 'relay-test');
    let statements = 0;
    const pool = new Proxy(db.pool(), {
      get: (target, property, receiver) =>
        property === 'query' ? (...args: Parameters<typeof target.query>) => (statements++, target.query(...args)) : Reflect.get(target, property, receiver),
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const published: string[] = [];
    const traces: (string | null)[] = [];
    const relay = createOutboxRelay({
      pool,
      publish: async (events, of) => {
        published.push(...events.map((e) => (e.type === 'input.accepted' ? e.data.input.id : e.type)));
        traces.push(...of);
        if (published.length === 1) await held;
      },
      ownedPartitions: () => [3],
      log: createLog('test'),
      sweepMs: 3_600_000,
      markAfterMs: 50,
    });
    await relay.idle();
    const write = (id: string) => appendToConversations(db.pool(), plainRules, 3, epochs, [{ conversation: 'e', probe: [] }], () => [chat(id)]);
    const before = statements;
    // e-0 is the conversation's first event (before: 0); e-1 commits while e-0 is being published, right after it.
    const first = await write('e-0');
    expect(first.before.get('e')).toBe(0);
    relay.enqueue(first);
    await vi.waitFor(() => expect(published).toEqual(['e-0']));
    const second = await write('e-1');
    expect(second.before.get('e')).toBe(first.stored[0].position);
    relay.enqueue(second);
    release();
    await vi.waitFor(() => expect(published).toEqual(['e-0', 'e-1']));
    expect(traces).toEqual([first.trace, second.trace]);
    // Marked by the timer, both in one statement: no read, no mark per publication.
    await vi.waitFor(async () => expect(await unpublished()).toBe(0));
    expect(statements - before).toBe(1);
    await relay.stop();
  });

  it('a commit enqueued is published at once; a commit nobody enqueued waits for the sweep of the whole table, and sends the commits after it of its conversation to the table', async () => {
    const epochs = await takePartitions(db.pool(), [4], 'relay-test');
    const published: string[] = [];
    const relay = createOutboxRelay({
      pool: db.pool(),
      publish: async (events) => void published.push(...events.map((e) => (e.type === 'input.accepted' ? e.data.input.id : e.type))),
      ownedPartitions: () => [4],
      log: createLog('test'),
      sweepMs: 3_600_000,
    });
    await relay.idle();
    const write = (conversation: string, id: string) => appendToConversations(db.pool(), plainRules, 4, epochs, [{ conversation, probe: [] }], () => [chat(id)]);
    await write('g', 'g-0'); // committed, never enqueued
    relay.enqueue(await write('f', 'f-0'));
    await relay.idle();
    relay.enqueue(await write('f', 'f-1'));
    await relay.idle();
    expect(published.filter((id) => /^[fg]-/.test(id))).toEqual(['f-0', 'f-1']);
    relay.sweep();
    await relay.idle();
    expect(published.filter((id) => /^[fg]-/.test(id))).toEqual(['f-0', 'f-1', 'g-0']);
    // f-2 is never enqueued; f-3 is, and does not follow what was published of f (f-1): both are read from the table, in order.
    await write('f', 'f-2');
    relay.enqueue(await write('f', 'f-3'));
    await relay.idle();
    expect(published.filter((id) => /^[fg]-/.test(id))).toEqual(['f-0', 'f-1', 'g-0', 'f-2', 'f-3']);
    expect(await unpublished()).toBe(0);
    await relay.stop();
  });

  it('stores one watermark per conversation, never lowered, and a relay that takes over publishes from it, not from the start', async () => {
    const epochs = await takePartitions(db.pool(), [5], 'relay-test');
    const watermark = async (conversation: string) =>
      Number((await db.pool().query<{ p: string }>('SELECT published_position AS p FROM event_store.conversations WHERE key = $1', [conversation])).rows[0].p);
    const write = (id: string) => appendToConversations(db.pool(), plainRules, 5, epochs, [{ conversation: 'h', probe: [] }], () => [chat(id)]);
    const first: string[] = [];
    const relay = createOutboxRelay({
      pool: db.pool(),
      publish: async (events) => void first.push(...events.map((e) => (e.type === 'input.accepted' ? e.data.input.id : e.type))),
      ownedPartitions: () => [5],
      log: createLog('test'),
      sweepMs: 3_600_000,
    });
    await relay.idle();
    const zero = await write('h-0');
    relay.enqueue(zero);
    const second = await write('h-1');
    relay.enqueue(second);
    await relay.idle();
    await relay.stop();
    expect(first.filter((id) => id.startsWith('h-'))).toEqual(['h-0', 'h-1']);
    expect(await watermark('h')).toBe(second.stored[0].position);

    // A relay that published less (its memory of h is behind, say it lost the partition) never lowers it.
    const behind = createOutboxRelay({ pool: db.pool(), publish: async () => undefined, ownedPartitions: () => [], log: createLog('test'), sweepMs: 3_600_000 });
    behind.enqueue(zero); // h-0 again: its watermark would be h-0's position
    await behind.idle();
    await behind.stop();
    expect(await watermark('h')).toBe(second.stored[0].position);

    // The next owner has published nothing of h: it starts after the stored watermark.
    await write('h-2');
    const next: string[] = [];
    const taker = createOutboxRelay({
      pool: db.pool(),
      publish: async (events) => void next.push(...events.map((e) => (e.type === 'input.accepted' ? e.data.input.id : e.type))),
      ownedPartitions: () => [5],
      log: createLog('test'),
      sweepMs: 3_600_000,
    });
    await taker.idle();
    expect(next.filter((id) => id.startsWith('h-'))).toEqual(['h-2']);
    expect(await unpublished()).toBe(0);
    await taker.stop();
  });
});
