import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@rudder/dev-services';
import { createPool, openSchema, schemaDataSource, type Pool } from '@rudder/runtime';
import { EVENT_STORE_SCHEMA, eventStoreMigrations } from '../schema';

let database: TestDatabase;
let pool: Pool;
const migrate = async (upTo: number) =>
  (await openSchema(schemaDataSource(database.url, EVENT_STORE_SCHEMA, { migrations: eventStoreMigrations.slice(0, upTo), poolSize: 1 }))).destroy();

beforeAll(async () => {
  database = await createTestDatabase(inject('databaseUrl'));
  pool = createPool(database.url);
});
afterAll(async () => {
  await pool.end();
  await database.drop();
});

describe('the published watermark migration', () => {
  it('turns the marks of a store written before it into each conversation’s watermark: just below its first unmarked event, else its last', async () => {
    const before = eventStoreMigrations.findIndex((m) => m.name === 'PublishedWatermark1764900000000');
    expect(before).toBeGreaterThan(0);
    await migrate(before);
    await pool.query(`INSERT INTO event_store.conversations (key, partition) VALUES ('all', 0), ('some', 0), ('none', 0), ('empty', 0)`);
    // Positions interleave across conversations, as they do in a log many write to.
    for (const [n, conversation] of ['all', 'some', 'none', 'all', 'some', 'none', 'some'].entries()) {
      await pool.query(
        `WITH e AS (INSERT INTO event_store.events (id, conversation, type, data, once_key) VALUES (gen_random_uuid(), $1, 'x', '{}', $2) RETURNING position)
         UPDATE event_store.conversations SET last_position = (SELECT position FROM e) WHERE key = $1`,
        [conversation, `k${n}`],
      );
    }
    // 'all' is published whole; 'some' up to 5 (7 not); 'none' not at all (below 3, its first, there is nothing).
    await pool.query(`UPDATE event_store.events SET published_at = now() WHERE conversation = 'all' OR (conversation = 'some' AND position <= 5)`);
    await migrate(eventStoreMigrations.length);

    const { rows } = await pool.query<{ key: string; published_position: string }>('SELECT key, published_position FROM event_store.conversations');
    expect(Object.fromEntries(rows.map((r) => [r.key, Number(r.published_position)]))).toEqual({ all: 4, some: 6, none: 2, empty: 0 });
    const outbox = await pool.query<{ conversation: string; position: string }>('SELECT conversation, position FROM event_store.outbox ORDER BY position');
    expect(outbox.rows.map((r) => `${r.conversation}@${r.position}`)).toEqual(['none@3', 'none@6', 'some@7']);
    const column = await pool.query(`SELECT 1 FROM information_schema.columns WHERE table_schema = 'event_store' AND table_name = 'events' AND column_name = 'published_at'`);
    expect(column.rows).toEqual([]);
  });
});
