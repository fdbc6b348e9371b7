import { afterAll, beforeAll, inject } from 'vitest';
import { createTestDatabase, type TestDatabase, type TestDatabaseOptions } from '@rudder/dev-services';
import { createPool, type Pool } from '@rudder/runtime';
import type { StreamRules } from './writes';
import { migrateEventStore } from './schema';

/**
 * For a spec file: a fresh database on the run's PostgreSQL with the event store migrated,
 * dropped after the file. `pool()` is valid inside tests. `options.icuLocale` gives the
 * database that default collation (the run's server compares in C otherwise).
 */
export function useEventStoreDatabase(options: TestDatabaseOptions = {}): { pool(): Pool; url(): string } {
  let database: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'), options);
    await migrateEventStore(database.url);
    pool = createPool(database.url);
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
  });
  return { pool: () => pool, url: () => database.url };
}

/**
 * Rules of a stream for the store's own specs: no state, and an event's once key is its type
 * and data (the same event twice is stored once). The conversation's real rules live in
 * @rudder/conversation; the store never needs them.
 */
export const plainRules: StreamRules<null> = {
  parse: () => null,
  evolve: () => null,
  onceKey: (event) => `${event.type}:${JSON.stringify(event.data)}`,
  hasOpenWork: () => false,
};
