import { afterAll, beforeAll, inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@rudder/dev-services';
import { createPool, migrate, type Pool } from '@rudder/runtime';
import { EVENT_STORE_SCHEMA, eventStoreMigrations } from './schema';

/**
 * For a spec file: a fresh database on the run's PostgreSQL with the event store migrated,
 * dropped after the file. `pool()` is valid inside tests.
 */
export function useEventStoreDatabase(): { pool(): Pool } {
  let database: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'));
    pool = createPool(database.url);
    await migrate(pool, EVENT_STORE_SCHEMA, eventStoreMigrations);
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
  });
  return { pool: () => pool };
}
