import type { ServerResponse } from 'node:http';
import { Controller, Inject, Res } from '@nestjs/common';
import { Route } from '../http/route';
import { OPERATION_ROUTES } from './operations.routes';
import { GatewayMetrics } from '../http/gateway-metrics';

/** `GET /metrics`: the gateway's Prometheus metrics (text exposition format). Unauthenticated, like /healthz: keep it off the public edge. */
@Controller()
export class MetricsController {
  constructor(@Inject(GatewayMetrics) private readonly metrics: GatewayMetrics) {}

  @Route(OPERATION_ROUTES.metrics)
  async scrape(@Res() response: ServerResponse): Promise<void> {
    const text = await this.metrics.registry.metrics();
    response.writeHead(200, { 'content-type': this.metrics.registry.contentType });
    response.end(text);
  }
}
