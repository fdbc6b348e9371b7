import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { createKafka, createLog, createPool, migrate, type Config, type Log } from '@rudder/runtime';
import { AppModule } from './app.module';
import { DatabaseOutage } from './http/database-outage';
import { ErrorFilter } from './http/errors';
import { consumeEvents, type EventConsumer } from './projection/consume-events';
import { migrations, SCHEMA } from './schema';

export type Companion = {
  /** The port the HTTP API listens on (the real one when COMPANION_PORT is 0). */
  port: number;
  /** Stops consuming, then closes the HTTP API, then the pool. Safe to call twice. */
  stop(): Promise<void>;
};

export type CompanionOptions = {
  log?: Log;
  /** False serves the HTTP API without consuming `agent.events` (tests that fold by hand). Default true. */
  consume?: boolean;
};

/**
 * Migrates the `companion` schema, serves the internal HTTP API on COMPANION_PORT and folds
 * `agent.events` into the projections. Resolves once all three are up; anything that fails
 * on the way is closed again before the error is thrown.
 */
export async function startCompanion(config: Config, options: CompanionOptions = {}): Promise<Companion> {
  const log = options.log ?? createLog('companion');
  const pool = createPool(config.DATABASE_URL);
  const closers: (() => Promise<void>)[] = [() => pool.end()];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((error) => log.warn('closing failed', { error: String(error) }));
  };
  try {
    await migrate(pool, SCHEMA, migrations);

    const app = await NestFactory.create(AppModule.forRoot(pool), { logger: ['error', 'warn'], abortOnError: false });
    const outage = new DatabaseOutage(pool, log);
    closers.push(async () => outage.stop());
    app.useGlobalFilters(new ErrorFilter(log, outage));
    await app.listen(config.COMPANION_PORT);
    closers.push(() => app.close());
    const port = (app.getHttpServer() as Server).address() as AddressInfo;

    if (options.consume !== false) {
      const consumer: EventConsumer = await consumeEvents({
        kafka: createKafka(config.KAFKA_BROKERS, 'companion'),
        pool,
        config,
        log,
      });
      closers.push(() => consumer.stop());
    }
    return { port: port.port, stop: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
