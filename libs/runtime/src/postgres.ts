import pg from 'pg';
import { DataSource, MigrationExecutor, type EntitySchema, type MigrationInterface, type QueryRunner } from 'typeorm';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/**
 * A pool of connections to `databaseUrl`, at most `max`. Its sessions plan a prepared statement
 * once (`plan_cache_mode=force_generic_plan`, a startup option): the event store's statements
 * are a few fixed shapes whose plan does not depend on their values (index lookups by key, the
 * rows to write as arrays), yet PostgreSQL re-planned each execution of its writes, their custom
 * plan estimated cheaper than the generic one: 0.7 of the 1.2 ms the one-statement append took
 * on the server (pg_stat_statements, docs/performance.md, "Measured choices in the code").
 * `applicationName` names its sessions in pg_stat_activity (growing the primaries tells the
 * gateways', which may stay connected, from the others).
 */
export function createPool(databaseUrl: string, max = 10, applicationName?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, options: '-c plan_cache_mode=force_generic_plan', application_name: applicationName });
  // An idle client that loses its server (a database restart) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * A TypeORM DataSource on the one PostgreSQL schema a service owns: its tables, and its ledger
 * of migrations `<schema>.typeorm_migrations`. Not initialized yet: `openSchema` does that.
 */
export function schemaDataSource(
  databaseUrl: string,
  schema: string,
  options: { migrations: (new () => MigrationInterface)[]; entities?: EntitySchema[]; poolSize?: number },
): DataSource {
  return new DataSource({
    type: 'postgres',
    url: databaseUrl,
    schema,
    entities: options.entities ?? [],
    migrations: options.migrations,
    migrationsTableName: 'typeorm_migrations',
    poolSize: options.poolSize ?? 10,
  });
}

/**
 * Initializes the DataSource and applies its pending migrations in order, once each, each in
 * a transaction of its own. Several processes may start at once: an advisory lock per schema,
 * held by the session that migrates, serializes them. On failure the DataSource is closed.
 */
export async function openSchema(dataSource: DataSource): Promise<DataSource> {
  const { schema } = dataSource.options as { schema?: string };
  if (!schema) throw new Error('openSchema needs a DataSource with a schema');
  await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [`rudder-migrate:${schema}`]);
    try {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      const executor = new MigrationExecutor(dataSource, runner);
      executor.transaction = 'each';
      await executor.executePendingMigrations();
    } finally {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [`rudder-migrate:${schema}`]).catch(() => undefined);
    }
  } catch (error) {
    await runner.release().catch(() => undefined);
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
  await runner.release();
  return dataSource;
}

/**
 * For a schema's first TypeORM migration: whether the schema is there already, made by the
 * hand-written migrations that came before TypeORM (ledger `<schema>.migrations`). Complete
 * (its last step is `lastId`): that ledger is dropped and the tables are kept, being what the
 * first migration creates. There but older: this throws, saying so.
 */
export async function adoptHandWrittenSchema(runner: QueryRunner, schema: string, lastId: string): Promise<boolean> {
  const [ledger] = (await runner.query('SELECT to_regclass($1) IS NOT NULL AS present', [`${schema}.migrations`])) as { present: boolean }[];
  if (!ledger.present) return false;
  const applied = (await runner.query(`SELECT id FROM ${schema}.migrations`)) as { id: string }[];
  if (!applied.some((row) => row.id === lastId))
    throw new Error(`the ${schema} schema was made by an older version (its last migration is not ${lastId}): run that version once to bring it up to date, or drop the schema`);
  await runner.query(`DROP TABLE ${schema}.migrations`);
  return true;
}

/**
 * True for errors that say the data itself was refused, which a retry will not change:
 * SQLSTATE classes 22 (data exception), 23 (integrity constraint violation) and 54 (program
 * limit exceeded). Anything else (the database is down, a connection dropped) may pass.
 */
export const isRefusedByDatabase = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
};

/** The session is gone (ended by the server, or the connection dropped): its client must not go back to the pool. */
export const isSessionLost = (error: unknown): boolean => {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  return typeof code !== 'string' || severity === 'FATAL';
};
