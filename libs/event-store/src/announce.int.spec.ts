import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { Announcement, type DomainEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import { appendToConversation } from './append-to-conversation';
import { appendToConversations } from './append-to-conversations';
import { singleWrites } from './grouped-writes';
import { notificationQueueUsage } from './announce';
import { takePartitions } from './fencing';
import type { StreamRules } from './writes';
import { useEventStoreDatabase } from './testing';

/**
 * What a write stores, announced on a channel as it commits, on both of its ways — the
 * one statement and the transaction — by the write's own statement: one `Announcement` per
 * conversation, with the position of its last event before the write; a conversation's part too
 * large for a notification announces nothing (its readers have the outbox).
 */
const db = useEventStoreDatabase();
const rules: StreamRules<number> = {
  parse: (stored) => (typeof stored === 'number' ? stored : 0),
  evolve: (count) => count + 1,
  onceKey: (event) => `${event.type}:${JSON.stringify(event.data)}`,
  hasOpenWork: () => false,
};
const steer = (id: string, text = 'use Celsius'): DomainEvent => ({ type: 'steer.accepted', data: { input: { id, text }, turn: 't1', landed: true } });

/** Listens on `channel` while `write` runs; answers what was announced, in order. */
async function heard(channel: string, write: (pool: Pool) => Promise<unknown>) {
  const listener = new pg.Client({ connectionString: db.url() });
  await listener.connect();
  const payloads: string[] = [];
  listener.on('notification', (message) => payloads.push(message.payload!));
  await listener.query(`LISTEN "${channel}"`);
  try {
    await write(db.pool());
    await new Promise((resolve) => setTimeout(resolve, 200));
    return payloads.map((payload) => {
      const announcement = Announcement.parse(JSON.parse(payload));
      // Its conversation and last position first, as a gateway reads them without parsing the rest (`announcedHead`).
      expect(payload.startsWith(`{"conversation" : ${JSON.stringify(announcement.conversation)}, "last" : ${announcement.events.at(-1)!.position}, `)).toBe(true);
      expect(announcement.last).toBe(announcement.events.at(-1)!.position);
      return announcement;
    });
  } finally {
    await listener.end();
  }
}

describe('announced writes', () => {
  it('are sent as the write commits, by the transaction and by the one statement, as records of what was stored', async () => {
    const epochs = await takePartitions(db.pool(), [0], 'announce-test');
    /** The pool, counting its statements, its transactions' connections and their statements. */
    const counting = (pool: Pool) => {
      const counts = { statements: 0, connections: 0, inTransaction: 0 };
      const wrapped = new Proxy(pool, {
        get: (target, property, receiver) =>
          property === 'query'
            ? (...args: Parameters<Pool['query']>) => (counts.statements++, target.query(...args))
            : property === 'connect'
              ? async () => {
                  counts.connections++;
                  const client = await target.connect();
                  return new Proxy(client, {
                    get: (c, p, r) => {
                      const value = Reflect.get(c, p, r) as unknown;
                      if (p !== 'query' || typeof value !== 'function') return value;
                      return (...args: unknown[]) => (counts.inTransaction++, (value as (...a: unknown[]) => unknown).apply(c, args));
                    },
                  });
                }
              : Reflect.get(target, property, receiver),
      });
      return { pool: wrapped, counts };
    };
    // A new conversation: its row and first events by one statement, which announces them (nothing before them).
    let position = 0;
    let counts = { statements: 0, connections: 0, inTransaction: 0 };
    const first = await heard('decisions_a', async (pool) => {
      const counted = counting(pool);
      counts = counted.counts;
      const { stored } = await appendToConversations(counted.pool, rules, 0, epochs, [{ conversation: 'c1', probe: [] }], () => [steer('s1')], undefined, { announce: 'decisions_a' });
      position = stored[0].position;
    });
    expect(counts).toEqual({ statements: 1, connections: 0, inTransaction: 0 });
    expect(first).toMatchObject([{ conversation: 'c1', after: 0, events: [{ conversation: 'c1', position, type: 'steer.accepted', data: { input: { id: 's1' } } }] }]);
    // Not held, not new: the statement writes nothing, and the transaction (BEGIN, the locks, the probe, the write, COMMIT) announces what it stores.
    const again = await heard('decisions_a', async (pool) => {
      const counted = counting(pool);
      counts = counted.counts;
      const { stored } = await appendToConversations(counted.pool, rules, 0, epochs, [{ conversation: 'c1', probe: [] }], () => [steer('s1b')], undefined, { announce: 'decisions_a' });
      return stored;
    });
    expect(counts).toEqual({ statements: 1, connections: 1, inTransaction: 5 });
    expect(again).toMatchObject([{ conversation: 'c1', after: position, events: [{ conversation: 'c1', type: 'steer.accepted', data: { input: { id: 's1b' } } }] }]);
    position = again[0].events[0].position;
    // Held as of its last event: the one statement, which announces in itself (no statement or connection more).
    let statements = 0;
    let connections = 0;
    const second = await heard('decisions_a', (pool) => {
      const counted = new Proxy(pool, {
        get: (target, property, receiver) =>
          property === 'query'
            ? (...args: Parameters<Pool['query']>) => (statements++, target.query(...args))
            : property === 'connect'
              ? () => (connections++, target.connect())
              : Reflect.get(target, property, receiver),
      });
      return appendToConversations(counted, rules, 0, epochs, [{ conversation: 'c1', probe: [] }], () => [steer('s2')], () => ({ position, state: 2 }), { announce: 'decisions_a' });
    });
    expect({ statements, connections }).toEqual({ statements: 1, connections: 0 });
    expect(second).toEqual([
      { conversation: 'c1', last: expect.any(Number), after: position, events: [expect.objectContaining({ conversation: 'c1', position: expect.any(Number), data: expect.objectContaining({ input: { id: 's2', text: 'use Celsius' } }) })] },
    ]);
    expect(second[0].events[0].position).toBeGreaterThan(position);
    // Without a channel, nothing.
    expect(await heard('decisions_a', (pool) => appendToConversations(pool, rules, 0, epochs, [{ conversation: 'c2', probe: [] }], () => [steer('s3')]))).toEqual([]);
  });

  it('a batch too large for one notification announces nothing, by the one statement (held, or new) and by the transaction alike; the next one that fits is announced', async () => {
    const epochs = await takePartitions(db.pool(), [1], 'announce-test');
    const big = 'x'.repeat(5000);
    const { stored } = await appendToConversations(db.pool(), rules, 1, epochs, [{ conversation: 'c3', probe: [] }], () => [steer('b0')]);
    const held = await heard('decisions_b', (pool) =>
      appendToConversations(pool, rules, 1, epochs, [{ conversation: 'c3', probe: [] }], () => [steer('b1', big), steer('b2', big)], () => ({ position: stored[0].position, state: 1 }), { announce: 'decisions_b' }),
    );
    expect(held).toEqual([]);
    const fresh = await heard('decisions_b', (pool) =>
      appendToConversations(pool, rules, 1, epochs, [{ conversation: 'c4', probe: [] }], () => [steer('b3', big), steer('b4', big), steer('b5', 'x'.repeat(9000))], undefined, { announce: 'decisions_b' }),
    );
    expect(fresh).toEqual([]);
    // Not held, not new: the transaction.
    const unheld = await heard('decisions_b', (pool) =>
      appendToConversations(pool, rules, 1, epochs, [{ conversation: 'c3', probe: [] }], () => [steer('b6', big), steer('b7', big)], undefined, { announce: 'decisions_b' }),
    );
    expect(unheld).toEqual([]);
    expect(await heard('decisions_b', (pool) => appendToConversations(pool, rules, 1, epochs, [{ conversation: 'c3', probe: [] }], () => [steer('b8')], undefined, { announce: 'decisions_b' }))).toMatchObject([
      { conversation: 'c3', events: [{ data: { input: { id: 'b8' } } }] },
    ]);
  });

  it('one per conversation, each with its own position before; one too large is left out, the others are not', async () => {
    const epochs = await takePartitions(db.pool(), [2], 'announce-test');
    const before = await appendToConversations(db.pool(), rules, 2, epochs, [{ conversation: 'c5', probe: [] }], () => [steer('m0')]);
    const lastOfC5 = before.stored[0].position;
    const announced = await heard('decisions_c', (pool) =>
      appendToConversations(
        pool,
        rules,
        2,
        epochs,
        [{ conversation: 'c5', probe: [] }, { conversation: 'c6', probe: [] }, { conversation: 'c7', probe: [] }],
        (conversation) => (conversation === 'c7' ? [steer('m3', 'x'.repeat(9000))] : [steer(`m-${conversation}`), steer(`m2-${conversation}`)]),
        undefined,
        { announce: 'decisions_c' },
      ),
    );
    const byConversation = [...announced].sort((a, b) => a.conversation.localeCompare(b.conversation));
    expect(byConversation.map((a) => ({ conversation: a.conversation, after: a.after, ids: a.events.map((e) => e.data) }))).toEqual([
      { conversation: 'c5', after: lastOfC5, ids: [expect.objectContaining({ input: { id: 'm-c5', text: 'use Celsius' } }), expect.objectContaining({ input: { id: 'm2-c5', text: 'use Celsius' } })] },
      { conversation: 'c6', after: 0, ids: [expect.objectContaining({ input: { id: 'm-c6', text: 'use Celsius' } }), expect.objectContaining({ input: { id: 'm2-c6', text: 'use Celsius' } })] },
    ]);
    for (const a of announced) expect(a.events.map((e) => e.position)).toEqual([...a.events.map((e) => e.position)].sort((x, y) => x - y));
  });

  it("a turn's writes too, by the one statement and by the transaction (appendToConversation)", async () => {
    const epochs = await takePartitions(db.pool(), [3], 'announce-test');
    const { stored } = await appendToConversations(db.pool(), rules, 3, epochs, [{ conversation: 'c8', probe: [] }], () => [steer('t0')]);
    const first = stored[0].position;
    const oneStatement = await heard('decisions_d', (pool) =>
      appendToConversation(pool, rules, 'c8', epochs, () => [steer('t1')], { position: first, state: 1 }, singleWrites(pool, rules, { announce: () => 'decisions_d' }), { announce: () => 'decisions_d' }),
    );
    expect(oneStatement).toMatchObject([{ conversation: 'c8', after: first, events: [{ data: { input: { id: 't1' } } }] }]);
    const second = oneStatement[0].events[0].position;
    // Not held (no state): the transaction.
    const transaction = await heard('decisions_d', (pool) =>
      appendToConversation(pool, rules, 'c8', epochs, () => [steer('t2')], undefined, singleWrites(pool, rules, { announce: () => 'decisions_d' }), { announce: () => 'decisions_d' }),
    );
    expect(transaction).toMatchObject([{ conversation: 'c8', after: second, events: [{ data: { input: { id: 't2' } } }] }]);
  });

  it("the notification queue's usage reads from the database (what AnnouncementGate closes on)", async () => {
    const usage = await notificationQueueUsage(db.pool())();
    expect(usage).toBeGreaterThanOrEqual(0);
    expect(usage).toBeLessThan(0.5);
  });
});
