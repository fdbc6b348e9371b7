import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { defaultAgent } from './agents/default-agent';
import { turnWorkerTransport } from './transport';
import { TurnWorkerModule } from './turn-worker.module';

/** The turn worker with the default agent (`npm run start:worker`). A team's own: see examples/. */
@Module({ imports: [TurnWorkerModule.forRoot({ agents: [defaultAgent] })] })
class DefaultWorkerModule {}

const log = createLog('turn-worker');
const app = await NestFactory.createMicroservice(DefaultWorkerModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
