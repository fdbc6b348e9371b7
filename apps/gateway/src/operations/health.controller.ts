import { Controller, Inject } from '@nestjs/common';
import { Route } from '../http/route';
import { GatewayError } from '../errors/gateway-error';
import { OPERATION_ROUTES } from './operations.routes';
import { HealthChecks, type Dependency } from './health-checks';

/**
 * `GET /healthz`: 200 `{ok: true}` once Kafka and the database answer, else 503 `unavailable`
 * naming what failed (`details: {kafka, database}`). Unauthenticated, for load balancers and
 * orchestrators; it tells nothing about conversations.
 */
@Controller()
export class HealthController {
  constructor(@Inject(HealthChecks) private readonly checks: HealthChecks) {}

  @Route(OPERATION_ROUTES.health)
  async health(): Promise<{ ok: true }> {
    const report = await this.checks.check();
    const failed = (Object.keys(report) as Dependency[]).filter((dependency) => report[dependency] !== 'ok');
    if (failed.length > 0) throw new GatewayError('unavailable', `not healthy: ${failed.join(' and ')} not answering`, report);
    return { ok: true };
  }
}
