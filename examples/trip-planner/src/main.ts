import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog } from '@rudder/runtime';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { TripPlannerModule } from './trip-planner.module';

const app = await NestFactory.createMicroservice(TripPlannerModule, { strategy: turnWorkerTransport() });
await app.listen();
closeOnSignals(() => app.close(), createLog('trip-planner'));
