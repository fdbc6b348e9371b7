import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { Log } from '@rudder/runtime';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { CompanionController } from './http/companion.controller';
import { closeReadModels, READ_MODELS, type ReadModels } from './read-models/data-source';
import { READ_FLOOR_POLL_MS, ReadFloorInterceptor } from './http/read-floor.interceptor';
import { DEAD_LETTERS, type EventDeadLetters } from './projection/dead-letters';
import { FoldController, LOG } from './projection/fold.controller';
import { FoldedPositions } from './projection/folded-positions';
import { CompanionMetrics } from './metrics/companion-metrics';
import { MetricsController } from './metrics/metrics.controller';
import { AffordanceMaker } from './affordances/affordance-maker';
import { AffordanceStore } from './affordances/affordance-store';
import { AffordancesController } from './affordances/affordances.controller';
import type { AffordanceSettings } from './affordances/settings';

/** The read models' connections close with the application, after the transport and the HTTP server. */
@Injectable()
class ReadModelsLifecycle implements OnApplicationShutdown {
  constructor(@Inject(READ_MODELS) private readonly readModels: ReadModels) {}
  onApplicationShutdown(): Promise<void> {
    return closeReadModels(this.readModels);
  }
}

/**
 * The companion: its read API over HTTP for the gateway, the follow-ups and recaps it makes
 * beside the turns (`affordances/`), and (given `deadLetters`, when it consumes) the handler of
 * agent.events batches on its microservice transport.
 */
@Module({})
export class AppModule {
  static forRoot(readModels: ReadModels, log: Log, deadLetters: EventDeadLetters | null, affordances: AffordanceSettings, readFloorPollMs?: number): DynamicModule {
    const metrics = new CompanionMetrics(readModels.all);
    return {
      module: AppModule,
      controllers: [CompanionController, AffordancesController, MetricsController, ...(deadLetters ? [FoldController] : [])],
      providers: [
        ...(deadLetters ? [{ provide: DEAD_LETTERS, useValue: deadLetters }] : []),
        { provide: READ_MODELS, useValue: readModels },
        { provide: LOG, useValue: log },
        { provide: CompanionMetrics, useValue: metrics },
        { provide: AffordanceMaker, useValue: new AffordanceMaker(new AffordanceStore(readModels), affordances, metrics, log) },
        ReadModelsLifecycle,
        FoldedPositions,
        ...(readFloorPollMs === undefined ? [] : [{ provide: READ_FLOOR_POLL_MS, useValue: readFloorPollMs }]),
        { provide: APP_INTERCEPTOR, useClass: ReadFloorInterceptor },
      ],
    };
  }
}
