import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { AdkTripsModule } from './adk-trips.module';

const log = createLog('adk-trips');
const app = await NestFactory.createMicroservice(AdkTripsModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
