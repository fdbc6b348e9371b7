import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { TripPlannerModule } from './trip-planner.module';

const log = createLog('trip-planner');
const app = await NestFactory.createMicroservice(TripPlannerModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
