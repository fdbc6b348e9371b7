import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Positions } from './consistency/positions';
import { companionUrl, createKafka, type Config, type Log } from '@rudder/runtime';
import { AffordancesController } from './affordances/affordances.controller';
import { AuthGuard } from './auth/auth.guard';
import { Authenticator } from './auth/authenticator';
import { ConversationAccess } from './companion/conversation-access';
import { GrantsController } from './grants/grants.controller';
import { GrantsHandler } from './grants/grants-handler';
import { ChatController } from './chat/chat.controller';
import { ChatHandler } from './chat/chat-handler';
import { CompanionClient } from './companion/companion-client';
import { Decisions } from './writes/decisions';
import { Writes } from './writes/submit';
import { ERROR_SHAPES, GatewayErrorFilter } from './errors/error-filter';
import { EventsController } from './events/events.controller';
import { EventsHandler } from './events/events-handler';
import { LiveEvents } from './live/live-events';
import { Announcements } from './live/announcements';
import { StreamBuffers } from './events/stream-buffers';
import { HealthController } from './health/health.controller';
import { HealthChecks } from './health/health-checks';
import { InputsPublisher } from './writes/inputs-publisher';
import { ReadRateGuard } from './limits/read-rate.guard';
import { InputRateGuard } from './limits/input-rate.guard';
import { limitSettings, SubjectLimits } from './limits/subject-limits';
import { MessagesController } from './messages/messages.controller';
import { PromoteController } from './promote/promote.controller';
import { PromoteHandler } from './promote/promote-handler';
import { RetractController } from './retract/retract.controller';
import { RetractHandler } from './retract/retract-handler';
import { StatusController } from './status/status.controller';
import { SteerController } from './steer/steer.controller';
import { SteerHandler } from './steer/steer-handler';
import { StopController } from './stop/stop.controller';
import { ApprovalsController } from './approvals/approvals.controller';
import { ApprovalsHandler } from './approvals/approvals-handler';
import { StopHandler } from './stop/stop-handler';
import { StreamTokensController } from './events/stream-tokens.controller';
import { TodosController } from './todos/todos.controller';
import { TurnsController } from './turns/turns.controller';
import { OpenApiController } from './openapi/openapi.controller';
import { GatewayMetrics } from './metrics/gateway-metrics';
import { MetricsController } from './metrics/metrics.controller';
import { WebController } from './web/web.controller';
import { ResponsesController } from './responses/responses.controller';
import { ResponsesHandler } from './responses/responses-handler';
import { PROTOCOL_ERRORS } from './responses/protocol-errors';
import { CONFIG, KAFKA, LOG, OPTIONS, type GatewayOptions } from './tokens';

@Module({})
export class GatewayModule {
  /** The whole gateway for one configuration; `startGateway` is the way to run it. */
  static forConfig(config: Config, log: Log, options: GatewayOptions = {}): DynamicModule {
    const positions = new Positions(options.aheadWaitMs);
    const authenticator = Authenticator.fromConfig(config, options.now);
    return {
      module: GatewayModule,
      controllers: [
        ChatController,
        SteerController,
        StopController,
        ApprovalsController,
        RetractController,
        PromoteController,
        StatusController,
        MessagesController,
        TurnsController,
        AffordancesController,
        TodosController,
        EventsController,
        StreamTokensController,
        GrantsController,
        HealthController,
        OpenApiController,
        MetricsController,
        WebController,
        ResponsesController,
      ],
      providers: [
        { provide: CONFIG, useValue: config },
        { provide: LOG, useValue: log },
        { provide: OPTIONS, useValue: options },
        { provide: KAFKA, useValue: createKafka(config.KAFKA_BROKERS, 'gateway', log) },
        { provide: Authenticator, useValue: authenticator },
        { provide: Positions, useValue: positions },
        { provide: GatewayMetrics, useValue: new GatewayMetrics() },
        { provide: CompanionClient, useValue: new CompanionClient(companionUrl(config), log, positions, config.COMPANION_TOKEN) },
        { provide: ERROR_SHAPES, useValue: [PROTOCOL_ERRORS] },
        { provide: APP_FILTER, useClass: GatewayErrorFilter },
        { provide: SubjectLimits, useValue: new SubjectLimits(limitSettings(config, authenticator.open), options.now) },
        AuthGuard,
        InputRateGuard,
        ReadRateGuard,
        ConversationAccess,
        InputsPublisher,
        LiveEvents,
        Announcements,
        Decisions,
        Writes,
        HealthChecks,
        ChatHandler,
        SteerHandler,
        GrantsHandler,
        StopHandler,
        ApprovalsHandler,
        RetractHandler,
        PromoteHandler,
        EventsHandler,
        StreamBuffers,
        ResponsesHandler,
      ],
    };
  }
}
