import { Module, type DynamicModule, type InjectionToken, type ModuleMetadata, type OptionalFactoryDependency } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { readConfig } from '@rudder/runtime';
import { AgentRegistry } from './agents/agents';
import { InputsController } from './ingest/inputs.controller';
import { TurnWorker } from './turn-worker.service';
import { WorkerMetrics } from './metrics/worker-metrics';
import { TURN_WORKER_OPTIONS, type TurnWorkerOptions } from './turn-worker.options';

export type TurnWorkerAsyncOptions = Pick<ModuleMetadata, 'imports'> & {
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  useFactory: (...args: never[]) => TurnWorkerOptions | Promise<TurnWorkerOptions>;
};

const withConfig = (options: TurnWorkerOptions) => ({ ...options, config: options.config ?? readConfig() });

/**
 * The turn worker as a module a team imports into its own Nest microservice: it registers the
 * team's agents (their tools are the team's providers, found by discovery) and handles
 * agent.inputs on the transport `turnWorkerTransport()` makes. See docs/agents.md.
 *
 *     @Module({ imports: [TurnWorkerModule.forRoot({ agents: [tripPlanner] })], providers: [TripTools, Hotels] })
 */
@Module({})
export class TurnWorkerModule {
  static forRoot(options: TurnWorkerOptions): DynamicModule {
    return TurnWorkerModule.with({ provide: TURN_WORKER_OPTIONS, useValue: withConfig(options) });
  }

  static forRootAsync(options: TurnWorkerAsyncOptions): DynamicModule {
    return TurnWorkerModule.with(
      {
        provide: TURN_WORKER_OPTIONS,
        inject: options.inject ?? [],
        useFactory: async (...args: never[]) => withConfig(await options.useFactory(...args)),
      },
      options.imports,
    );
  }

  private static with(provider: DynamicModule['providers'] extends (infer P)[] | undefined ? P : never, imports: ModuleMetadata['imports'] = []): DynamicModule {
    return {
      module: TurnWorkerModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      controllers: [InputsController],
      providers: [provider, WorkerMetrics, AgentRegistry, TurnWorker],
      exports: [AgentRegistry],
    };
  }
}
