import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export function createPool(databaseUrl: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  // An idle client that loses its server (a database restart) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}

export type Migration = { id: string; sql: string };

/**
 * Applies the migrations of one PostgreSQL schema that a service owns, in order, once each.
 * Several processes may start at once: an advisory lock per schema serializes them.
 */
export async function migrate(pool: pg.Pool, schema: string, migrations: readonly Migration[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`rudder-migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ id: string }>(`SELECT id FROM ${schema}.migrations`);
    const applied = new Set(rows.map((r) => r.id));
    for (const m of migrations) {
      if (applied.has(m.id)) continue;
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL search_path TO ${schema}`);
        await client.query(m.sql);
        await client.query(`INSERT INTO ${schema}.migrations (id) VALUES ($1)`, [m.id]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`rudder-migrate:${schema}`]).catch(() => undefined);
    client.release();
  }
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
