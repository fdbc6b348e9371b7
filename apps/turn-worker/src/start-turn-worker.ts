import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLog, nestLogger, type Config } from '@rudder/runtime';
import { defaultAgent } from './agents/default-agent';
import { turnWorkerTransport } from './transport';
import { TurnWorkerModule } from './turn-worker.module';
import type { TurnWorkerOptions } from './turn-worker.options';

export type RunningTurnWorker = { stop(): Promise<void> };

/** A turn worker in this process (the benchmarks and a few tests count its statements through `pool`). */
export async function startTurnWorker(config: Config, options: Partial<TurnWorkerOptions> = {}): Promise<RunningTurnWorker> {
  @Module({ imports: [TurnWorkerModule.forRoot({ agents: [defaultAgent], ...options, config })] })
  class InProcessWorkerModule {}
  const log = createLog('turn-worker');
  const app = await NestFactory.createMicroservice(InProcessWorkerModule, { strategy: turnWorkerTransport(config, log), logger: nestLogger(log) });
  await app.listen();
  return { stop: () => app.close() };
}
