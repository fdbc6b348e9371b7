import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { companionUrl, createKafka, type Config, type Log } from '@rudder/runtime';
import { AuthGuard } from './auth/auth.guard';
import { Authenticator } from './auth/authenticator';
import { CompanionClient } from './companion/companion-client';
import { ConversationAccess } from './companion/conversation-access';
import { Positions } from './consistency/positions';
import { ERROR_SHAPES, GatewayErrorFilter } from './errors/error-filter';
import { joinParts, ROUTE_TABLE } from './http/route';
import { InputRateGuard } from './limits/input-rate.guard';
import { ReadRateGuard } from './limits/read-rate.guard';
import { limitSettings, SubjectLimits } from './limits/subject-limits';
import { Announcements } from './live/announcements';
import { LiveEvents } from './live/live-events';
import { GatewayMetrics } from './http/gateway-metrics';
import { PARTS, ROUTES } from './routes';
import { CONFIG, KAFKA, LOG, OPTIONS, type GatewayOptions } from './tokens';
import { Decisions } from './writes/decisions';
import { InputsPublisher } from './writes/inputs-publisher';
import { Writes } from './writes/submit';

@Module({})
export class GatewayModule {
  /**
   * The whole gateway for one configuration; `startGateway` is the way to run it. What serves
   * the routes comes from the parts (routes.ts); below them, the same for every part: the
   * edge (authentication, limits, positions, errors), the companion client and the access
   * rule, the live consumer, and the one write path.
   */
  static forConfig(config: Config, log: Log, options: GatewayOptions = {}): DynamicModule {
    const positions = new Positions(options.aheadWaitMs);
    const authenticator = Authenticator.fromConfig(config, options.now);
    const parts = joinParts(PARTS);
    return {
      module: GatewayModule,
      controllers: [...parts.controllers],
      providers: [
        { provide: CONFIG, useValue: config },
        { provide: LOG, useValue: log },
        { provide: OPTIONS, useValue: options },
        { provide: KAFKA, useValue: createKafka(config.KAFKA_BROKERS, 'gateway', log) },
        { provide: Authenticator, useValue: authenticator },
        { provide: Positions, useValue: positions },
        { provide: GatewayMetrics, useValue: new GatewayMetrics() },
        { provide: CompanionClient, useValue: new CompanionClient(companionUrl(config), log, positions, config.COMPANION_TOKEN) },
        { provide: ERROR_SHAPES, useValue: parts.errorShapes },
        { provide: APP_FILTER, useClass: GatewayErrorFilter },
        { provide: SubjectLimits, useValue: new SubjectLimits(limitSettings(config, authenticator.open), options.now) },
        { provide: ROUTE_TABLE, useValue: ROUTES },
        AuthGuard,
        InputRateGuard,
        ReadRateGuard,
        ConversationAccess,
        InputsPublisher,
        LiveEvents,
        Announcements,
        Decisions,
        Writes,
        ...parts.providers,
      ],
    };
  }
}
