import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { TripPlannerModule } from './trip-planner.module';

const app = await NestFactory.createMicroservice(TripPlannerModule, { strategy: turnWorkerTransport() });
app.enableShutdownHooks();
await app.listen();
