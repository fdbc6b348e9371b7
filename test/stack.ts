import { inject } from 'vitest';
import { startSystem, type Stack, type StackOptions } from './system';

export * from './system';

/** The whole system (see system.ts) on the test run's Kafka and PostgreSQL (test/global-setup.ts). */
export const startStack = (options: StackOptions = {}): Promise<Stack> =>
  startSystem({ kafkaBrokers: inject('kafkaBrokers'), databaseUrl: inject('databaseUrl') }, options);
