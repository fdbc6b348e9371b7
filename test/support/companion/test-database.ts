import { inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@rudder/dev-services';

/**
 * The server tests create their databases on: the run's (the global setup provides it), else
 * DATABASE_URL, else the local server.
 */
export const serverUrl = (): string =>
  provided('databaseUrl') ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The run's Kafka, if any: the global setup's, else KAFKA_BROKERS. */
export const kafkaBrokers = (): string | undefined => provided('kafkaBrokers') ?? process.env.KAFKA_BROKERS;

/** A fresh, empty database on the test server, dropped by `drop()`: one per spec file. */
export const createFreshDatabase = (): Promise<TestDatabase> => createTestDatabase(serverUrl());

function provided(key: 'databaseUrl' | 'kafkaBrokers'): string | undefined {
  try {
    return inject(key) || undefined;
  } catch {
    return undefined; // run without the global setup
  }
}
