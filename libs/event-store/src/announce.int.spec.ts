import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { parseConversationEvent, type ConversationEvent, type DomainEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import { appendToConversations } from './append-to-conversations';
import { takePartitions } from './fencing';
import type { StreamRules } from './writes';
import { useEventStoreDatabase } from './testing';

/**
 * An ingest's decisions announced on a channel as they commit (issue 36 item 1), on both of its
 * ways — the one statement and the transaction — by the write's own statement; a batch too
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

/** Listens on `channel` while `write` runs; answers what was announced (each payload's records) and how many statements the write sent. */
async function heard(channel: string, write: (pool: Pool) => Promise<unknown>) {
  const listener = new pg.Client({ connectionString: db.url() });
  await listener.connect();
  const records: ConversationEvent[][] = [];
  listener.on('notification', (message) => records.push((JSON.parse(message.payload!) as unknown[]).map(parseConversationEvent)));
  await listener.query(`LISTEN "${channel}"`);
  try {
    await write(db.pool());
    await new Promise((resolve) => setTimeout(resolve, 200));
    return records;
  } finally {
    await listener.end();
  }
}

describe('announced decisions', () => {
  it('are sent as the write commits, by the transaction and by the one statement, as records of what was stored', async () => {
    const epochs = await takePartitions(db.pool(), [0], 'announce-test');
    let position = 0;
    // Not held: the transaction, whose statements are counted (BEGIN, the locks, the probe, the write, COMMIT).
    let inTransaction = 0;
    const first = await heard('decisions_a', async (pool) => {
      const counting = new Proxy(pool, {
        get: (target, property, receiver) =>
          property === 'connect'
            ? async () => {
                const client = await target.connect();
                return new Proxy(client, {
                  get: (c, p, r) => {
                    const value = Reflect.get(c, p, r) as unknown;
                    if (p !== 'query' || typeof value !== 'function') return value;
                    return (...args: unknown[]) => (inTransaction++, (value as (...a: unknown[]) => unknown).apply(c, args));
                  },
                });
              }
            : Reflect.get(target, property, receiver),
      });
      const { stored } = await appendToConversations(counting, rules, 0, epochs, [{ conversation: 'c1', probe: [] }], () => [steer('s1')], undefined, { announce: 'decisions_a' });
      position = stored[0].position;
      return stored;
    });
    expect(inTransaction).toBe(5);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject([{ conversation: 'c1', position, type: 'steer.accepted', data: { input: { id: 's1' } } }]);
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
      return appendToConversations(counted, rules, 0, epochs, [{ conversation: 'c1', probe: [] }], () => [steer('s2')], () => ({ position, state: 1 }), { announce: 'decisions_a' });
    });
    expect({ statements, connections }).toEqual({ statements: 1, connections: 0 });
    expect(second).toEqual([[expect.objectContaining({ conversation: 'c1', position: expect.any(Number), data: expect.objectContaining({ input: { id: 's2', text: 'use Celsius' } }) })]]);
    expect(second[0][0].position).toBeGreaterThan(position);
    // Without a channel, nothing.
    expect(await heard('decisions_a', (pool) => appendToConversations(pool, rules, 0, epochs, [{ conversation: 'c2', probe: [] }], () => [steer('s3')]))).toEqual([]);
  });

  it('a batch too large for one notification announces nothing, by the one statement and by the transaction alike', async () => {
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
  });
});
