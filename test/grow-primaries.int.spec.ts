import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { openReadModels } from '@rudder/companion';
import { createTestDatabase, type TestDatabase } from '@rudder/dev-services';
import { migrateEventStore } from '@rudder/event-store';
import { shardMap } from '@rudder/runtime';
import { growPrimaries, PrimariesInUseError } from '../scripts/primaries-growth';
import { query } from './support/query';

/**
 * The procedure of growing the primaries (scripts/primaries-growth.ts) on three fresh
 * databases, written to by hand: what it moves, what it keeps (positions, epochs), what it does
 * when run again after an interruption, and when it refuses to run. Under load, with the
 * services, it is test/grow-primaries.e2e.spec.ts.
 */
const PARTITIONS = 6;
const opened: TestDatabase[] = [];
const sessions: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((client) => client.end().catch(() => undefined)));
  await Promise.all(opened.splice(0).map((database) => database.drop()));
});

async function primaries(count: number): Promise<string[]> {
  const databases = await Promise.all(Array.from({ length: count }, () => createTestDatabase(inject('databaseUrl'))));
  opened.push(...databases);
  for (const { url } of databases.slice(0, 2)) {
    await migrateEventStore(url);
    await (await openReadModels(url)).destroy();
  }
  return databases.map((d) => d.url);
}

async function session(url: string, applicationName?: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  await client.connect();
  sessions.push(client);
  return client;
}

const map = shardMap(['a', 'b'], PARTITIONS);
/** A conversation key whose partition is `partition`. */
const keyOn = (partition: number, name: string) => {
  for (let i = 0; ; i++) if (map.partitionOfKey(`${name}-${i}`) === partition) return `${name}-${i}`;
};

/** A conversation on `partition` with `events` events (positions from the primary's sequence), and its read model with a copy of each. */
async function conversation(url: string, key: string, partition: number, events: number): Promise<void> {
  await query(url, `INSERT INTO event_store.conversations (key, partition) VALUES ($1, $2)`, [key, partition]);
  for (let n = 0; n < events; n++) {
    await query(
      url,
      `WITH e AS (INSERT INTO event_store.events (id, conversation, type, data, once_key) VALUES (gen_random_uuid(), $1, 'x', '{}', $2) RETURNING position)
       UPDATE event_store.conversations SET last_position = (SELECT position FROM e), published_position = (SELECT position FROM e) WHERE key = $1`,
      [key, `k${n}`],
    );
  }
  await query(url, `INSERT INTO companion.conversations (key, position, state) SELECT $1, last_position, '{}' FROM event_store.conversations WHERE key = $1`, [key]);
  await query(url, `INSERT INTO companion.events (conversation, position, id, type, data, at) SELECT conversation, position, id::text, type, data, at FROM event_store.events WHERE conversation = $1`, [key]);
}

const logOf = async (url: string, key: string) => query<{ id: string; position: string }>(url, 'SELECT id, position FROM event_store.events WHERE conversation = $1 ORDER BY position', [key]);
const keysOn = async (url: string, table = 'event_store.conversations') => (await query<{ key: string }>(url, `SELECT key FROM ${table} ORDER BY key`)).map((r) => r.key);

describe('growing the primaries (scripts/primaries-growth.ts)', () => {
  it('moves the partitions whose shard changes with every row of their conversations, positions and epochs kept; run again after an interruption it finishes, then does nothing', async () => {
    const [a, b, c] = await primaries(3);
    const moving = keyOn(2, 'moving'); // shard 0 to 1
    const staying = keyOn(1, 'staying'); // shard 0
    const far = keyOn(4, 'far'); // shard 1 to 2
    await conversation(a, staying, 1, 2);
    await conversation(a, moving, 2, 3);
    await conversation(b, far, 4, 4); // positions 1 to 4: the same numbers as a's
    await query(a, `INSERT INTO event_store.partition_owners (partition, epoch, owner) VALUES (1, 3, 'w'), (2, 7, 'w')`);
    const movingLog = await logOf(a, moving);
    const farLog = await logOf(b, far);
    // An earlier run fenced partition 2 and was cut off half-way through its copy.
    await query(a, `UPDATE event_store.partition_owners SET epoch = 8, owner = 'grow-primaries', moved_to = 1 WHERE partition = 2`);
    await migrateEventStore(b);
    await query(b, `INSERT INTO event_store.conversations (key, partition) VALUES ($1, 2)`, [moving]);
    // A gateway's sessions may stay.
    await session(a, 'rudder-gateway-announcements');

    const lines: string[] = [];
    const report = await growPrimaries({ from: [a, b], to: [a, b, c], partitions: PARTITIONS, log: (line) => lines.push(line) });
    expect(report.routes.map((r) => ({ route: `${r.source}>${r.destination}`, partitions: r.partitions, conversations: r.conversations, done: r.done }))).toEqual([
      { route: '0>1', partitions: [2], conversations: 1, done: 'moved' },
      { route: '1>2', partitions: [4, 5], conversations: 1, done: 'moved' },
    ]);
    expect(report.routes[0].rows).toEqual({
      'event_store.conversations': 1,
      'event_store.events': 3,
      'event_store.snapshots': 0,
      'companion.conversations': 1,
      'companion.inputs': 0,
      'companion.turns': 0,
      'companion.transcript': 0,
      'companion.events': 3,
      'companion.affordances': 0,
      'companion.approvals': 0,
    });
    expect(lines.join('\n')).toMatch(/partitions 2 from shard 0 to 1: moved, 1 conversations/);

    expect([await keysOn(a), await keysOn(b), await keysOn(c)]).toEqual([[staying], [moving], [far]]);
    expect([await keysOn(a, 'companion.conversations'), await keysOn(b, 'companion.conversations'), await keysOn(c, 'companion.conversations')]).toEqual([[staying], [moving], [far]]);
    // Positions kept, though b had handed out the same ones (1 to 4) to its own conversation.
    expect(await logOf(b, moving)).toEqual(movingLog);
    expect(await logOf(c, far)).toEqual(farLog);
    expect(movingLog.map((e) => Number(e.position))).toEqual([3, 4, 5]);
    expect(farLog.map((e) => Number(e.position))).toEqual([1, 2, 3, 4]);
    // The next event of a moved conversation comes after its old ones, and after every position its old primary handed out.
    const [next] = await query<{ position: string }>(b, `INSERT INTO event_store.events (id, conversation, type, data, once_key) VALUES (gen_random_uuid(), $1, 'x', '{}', 'next') RETURNING position`, [moving]);
    expect(Number(next.position)).toBeGreaterThan(5);
    const [nextFar] = await query<{ position: string }>(c, `INSERT INTO event_store.events (id, conversation, type, data, once_key) VALUES (gen_random_uuid(), $1, 'x', '{}', 'next') RETURNING position`, [far]);
    expect(Number(nextFar.position)).toBeGreaterThan(4);
    // Epochs: fenced on the old primary (moved_to), going on from there on the new one.
    const owners = async (url: string) => query<{ partition: number; epoch: string; moved_to: number | null }>(url, 'SELECT partition, epoch, moved_to FROM event_store.partition_owners ORDER BY partition');
    expect(await owners(a)).toEqual([
      { partition: 1, epoch: '3', moved_to: null },
      { partition: 2, epoch: '9', moved_to: 1 },
    ]);
    expect(await owners(b)).toEqual([
      { partition: 2, epoch: '9', moved_to: null },
      { partition: 4, epoch: '1', moved_to: 2 },
      { partition: 5, epoch: '1', moved_to: 2 },
    ]);

    // Again: nothing left to move, nothing changed.
    const again = await growPrimaries({ from: [a, b], to: [a, b, c], partitions: PARTITIONS });
    expect(again.routes.map((r) => r.done)).toEqual(['already moved', 'already moved']);
    expect([await keysOn(a), await keysOn(b), await keysOn(c)]).toEqual([[staying], [moving], [far]]);
    expect((await logOf(b, moving)).length).toBe(4);
  });

  it('refuses to run, changing nothing, while a worker or companion may be connected, or when the new map would split a conversation from its key', async () => {
    const [a, b, c] = await primaries(3);
    const moving = keyOn(2, 'moving');
    await conversation(a, moving, 2, 2);

    const worker = await session(a);
    await expect(growPrimaries({ from: [a, b], to: [a, b, c], partitions: PARTITIONS })).rejects.toThrow(PrimariesInUseError);
    await worker.end();
    sessions.splice(sessions.indexOf(worker), 1);

    // First seen on partition 2 though its key's is 1 (a producer with another partitioner): one primary before, two after.
    const split = keyOn(1, 'split');
    await conversation(a, split, 2, 1);
    await expect(growPrimaries({ from: [a, b], to: [a, b, c], partitions: PARTITIONS })).rejects.toThrow(
      new RegExp(`1 conversation\\(s\\) live on another partition than their key's.*${split} \\(on partition 2, its key's is 1\\)`),
    );
    expect(await keysOn(a)).toEqual([moving, split].sort());
    expect(await keysOn(b)).toEqual([]);
    expect(await query(a, 'SELECT * FROM event_store.partition_owners')).toEqual([]);

    await expect(growPrimaries({ from: [a, b], to: [b, a, c], partitions: PARTITIONS })).rejects.toThrow(/must start with --from in the same order/);
  });
});
