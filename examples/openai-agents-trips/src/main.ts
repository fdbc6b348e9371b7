import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { TripsModule } from './trips.module';

const log = createLog('openai-agents-trips');
const app = await NestFactory.createMicroservice(TripsModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
