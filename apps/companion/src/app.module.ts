import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { Log, Pool } from '@rudder/runtime';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { CompanionController, POOL } from './http/companion.controller';
import { ReadFloorInterceptor } from './http/read-floor.interceptor';
import { EventsController, LOG } from './projection/events.controller';
import { CompanionMetrics } from './metrics/companion-metrics';
import { MetricsController } from './metrics/metrics.controller';

/** The pool closes with the application, after the transport and the HTTP server. */
@Injectable()
class PoolLifecycle implements OnApplicationShutdown {
  constructor(@Inject(POOL) private readonly pool: Pool) {}
  onApplicationShutdown(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * The companion: its read API over HTTP for the gateway, and (with `consume`) the handler of
 * agent.events batches on its microservice transport.
 */
@Module({})
export class AppModule {
  static forRoot(pool: Pool, log: Log, consume: boolean): DynamicModule {
    return {
      module: AppModule,
      controllers: [CompanionController, MetricsController, ...(consume ? [EventsController] : [])],
      providers: [
        { provide: POOL, useValue: pool },
        { provide: LOG, useValue: log },
        { provide: CompanionMetrics, useValue: new CompanionMetrics() },
        PoolLifecycle,
        { provide: APP_INTERCEPTOR, useClass: ReadFloorInterceptor },
      ],
    };
  }
}
