import type { ServerResponse } from 'node:http';
import { Controller, Get, Inject, Res } from '@nestjs/common';
import { CompanionMetrics } from './companion-metrics';

/** `GET /metrics`: the companion's Prometheus metrics. */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(CompanionMetrics) private readonly metrics: CompanionMetrics) {}

  @Get()
  async scrape(@Res() response: ServerResponse): Promise<void> {
    const text = await this.metrics.registry.metrics();
    response.writeHead(200, { 'content-type': this.metrics.registry.contentType });
    response.end(text);
  }
}
