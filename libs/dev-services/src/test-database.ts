import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type TestDatabase = {
  /** The server URL with the database name replaced by the new database. */
  url: string;
  /** Drops the database, disconnecting whoever is still connected. Idempotent. */
  drop(): Promise<void>;
};

/**
 * Creates an empty database `rudder_<random>` on the server of `serverUrl` (same host,
 * credentials and options), so that each test file gets a database of its own on one
 * shared server.
 */
export async function createTestDatabase(serverUrl: string): Promise<TestDatabase> {
  const name = `rudder_${randomBytes(6).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    // WITH (FORCE), PostgreSQL 13+: a pool a test forgot to end must not make drop() fail.
    drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function onServer(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end().catch(() => undefined);
  }
}
