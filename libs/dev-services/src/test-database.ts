import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type TestDatabase = {
  /** The server URL with the database name replaced by the new database. */
  url: string;
  /** Drops the database, disconnecting whoever is still connected. Idempotent. */
  drop(): Promise<void>;
};

export type TestDatabaseOptions = {
  /**
   * The database's default collation: an ICU locale (`'en-US'`), as a production database
   * made by a locale-aware `initdb` compares text, instead of the server's (C on the run's
   * embedded PostgreSQL). PostgreSQL 15+; the machine needs no OS locale for it.
   */
  icuLocale?: string;
};

/**
 * Creates an empty database `rudder_<random>` on the server of `serverUrl` (same host,
 * credentials and options), so that each test file gets a database of its own on one
 * shared server.
 */
export async function createTestDatabase(serverUrl: string, options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const name = `rudder_${randomBytes(6).toString('hex')}`;
  const collation = options.icuLocale === undefined
    ? ''
    : ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${options.icuLocale.replace(/'/g, "''")}' LOCALE 'C'`;
  await onServer(serverUrl, `CREATE DATABASE ${name}${collation}`);
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
