import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { configuredShards, createKafka, createLog, ensureTopics, nestLogger, startTracing, topicNames, type Config, type Log } from '@rudder/runtime';
import { AppModule } from './app.module';
import { DatabaseOutage } from './http/database-outage';
import { CompanionErrorFilter } from './http/errors';
import { checkBinding, requireServiceToken } from './http/service-token';
import { connectEventDeadLetters } from './projection/dead-letters';
import { companionTransport } from './projection/fold.controller';
import { closeReadModels, openShardedReadModels } from './read-models/data-source';
import { affordanceSettings, type AffordanceSettings } from './affordances/settings';

export type Companion = {
  /** The port the HTTP API listens on (the real one when COMPANION_PORT is 0). */
  port: number;
  /** Stops consuming, then closes the HTTP API, then the read models' connections. Safe to call twice. */
  stop(): Promise<void>;
};

export type CompanionOptions = {
  log?: Log;
  /** False serves the HTTP API without consuming `agent.events` (tests that fold by hand). Default true. */
  consume?: boolean;
  /** How follow-ups and recaps are made; default `affordanceSettings(config)`: the environment's model, AFFORDANCE_* and the prompts. */
  affordances?: AffordanceSettings;
  /** How often reads waiting for their view poll the database, in ms (default 15; a fold of this process wakes them at once). */
  readFloorPollMs?: number;
};

/**
 * Migrates the `companion` schema, serves the internal HTTP API on COMPANION_HOST (loopback
 * unless set; anywhere else only with COMPANION_TOKEN, checked first) and COMPANION_PORT, and folds
 * `agent.events` into the projections (a Nest microservice transport on the same application).
 * Resolves once all three are up; anything that fails on the way is closed again before the
 * error is thrown.
 */
export async function startCompanion(config: Config, options: CompanionOptions = {}): Promise<Companion> {
  const log = options.log ?? createLog('companion');
  checkBinding(config.COMPANION_HOST, config.COMPANION_TOKEN);
  const affordances = options.affordances ?? affordanceSettings(config);
  if (!affordances.model) log.warn('follow-up suggestions and recaps answer empty: no model (set OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server)');
  startTracing('companion');
  // Until the application owns the read models (and closes them on shutdown), closing is ours.
  let closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((error) => log.warn('closing failed', { error: String(error) }));
  };
  try {
    const readModels = await openShardedReadModels(configuredShards(config));
    closers = [() => closeReadModels(readModels)];

    const consume = options.consume !== false;
    if (consume) await ensureTopics(createKafka(config.KAFKA_BROKERS, 'companion', log), topicNames(config.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);
    const deadLetters = consume ? await connectEventDeadLetters(config) : null;
    if (deadLetters) closers.push(() => deadLetters.close());
    const app = await NestFactory.create(AppModule.forRoot(readModels, log, deadLetters, affordances, options.readFloorPollMs), { logger: nestLogger(log), abortOnError: false });
    app.use(requireServiceToken(config.COMPANION_TOKEN));
    const outage = new DatabaseOutage(readModels.all, log);
    app.useGlobalFilters(new CompanionErrorFilter(log, outage));
    // Closed in reverse: the outage watch, the application (transport, HTTP, pool), the dead letters' producer.
    closers = [...(deadLetters ? [() => deadLetters.close()] : []), () => app.close(), async () => outage.stop()];
    if (consume) {
      app.connectMicroservice({ strategy: companionTransport(config, log) });
      await app.startAllMicroservices();
    }
    await app.listen(config.COMPANION_PORT, config.COMPANION_HOST);
    const port = (app.getHttpServer() as Server).address() as AddressInfo;
    return { port: port.port, stop: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
