import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { Log } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { CompanionController } from './http/companion.controller';
import { READ_MODELS } from './read-models/data-source';
import { ReadFloorInterceptor } from './http/read-floor.interceptor';
import { DEAD_LETTERS, type EventDeadLetters } from './projection/dead-letters';
import { FoldController, LOG } from './projection/fold.controller';
import { CompanionMetrics } from './metrics/companion-metrics';
import { MetricsController } from './metrics/metrics.controller';

/** The read models' connections close with the application, after the transport and the HTTP server. */
@Injectable()
class ReadModelsLifecycle implements OnApplicationShutdown {
  constructor(@Inject(READ_MODELS) private readonly readModels: DataSource) {}
  onApplicationShutdown(): Promise<void> {
    return this.readModels.destroy();
  }
}

/**
 * The companion: its read API over HTTP for the gateway, and (given `deadLetters`, when it
 * consumes) the handler of agent.events batches on its microservice transport.
 */
@Module({})
export class AppModule {
  static forRoot(readModels: DataSource, log: Log, deadLetters: EventDeadLetters | null): DynamicModule {
    return {
      module: AppModule,
      controllers: [CompanionController, MetricsController, ...(deadLetters ? [FoldController] : [])],
      providers: [
        ...(deadLetters ? [{ provide: DEAD_LETTERS, useValue: deadLetters }] : []),
        { provide: READ_MODELS, useValue: readModels },
        { provide: LOG, useValue: log },
        { provide: CompanionMetrics, useValue: new CompanionMetrics(readModels) },
        ReadModelsLifecycle,
        { provide: APP_INTERCEPTOR, useClass: ReadFloorInterceptor },
      ],
    };
  }
}
