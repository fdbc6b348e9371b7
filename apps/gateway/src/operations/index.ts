import type { GatewayPart } from '../http/route';
import { HealthChecks } from './health-checks';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';
import { OpenApiController } from './openapi.controller';
import { OPERATION_ROUTES } from './operations.routes';

/** What operators and tools read, without a token: `/healthz`, `/metrics`, `/openapi.json` and `/docs`. */
export const OPERATIONS: GatewayPart = {
  routes: OPERATION_ROUTES,
  controllers: [HealthController, OpenApiController, MetricsController],
  providers: [HealthChecks],
};
