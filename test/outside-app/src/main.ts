/**
 * The app's turn worker (`npm run build && npm start`): Kafka, PostgreSQL and the model come from
 * the environment (KAFKA_BROKERS, DATABASE_URL, OPENAI_*; docs/agents.md).
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { FrontDeskModule } from './front-desk.js';

const log = createLog('front-desk');
const app = await NestFactory.createMicroservice(FrontDeskModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
