import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

/**
 * How often the event loop's delay is sampled for `nodejs_eventloop_lag_*`, in ms. prom-client's
 * default (10 ms) wakes an idle service 100 times a second; every 100 ms still sees each stall
 * that lasts longer than that, which is what the metric is read for.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * A service's own Prometheus registry (not prom-client's global one: the tests run the
 * gateway and the companion in one process), with the process metrics and `service` as a
 * default label. Each service defines its `rudder_*` metrics on it.
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  return registry;
}

/**
 * `rudder_consumer_lag{topic,partition}` on `registry`: records of each partition a consumer
 * has not handled yet, as of its last fetch (set from each handled slice's `lag`).
 */
export function consumerLag(registry: Registry): (batch: { topic: string; partition: number; lag: number }) => void {
  const gauge = new Gauge({
    name: 'rudder_consumer_lag',
    help: 'Records of the partition not yet handled by this consumer, as of its last fetch (by topic and partition)',
    labelNames: ['topic', 'partition'],
    registers: [registry],
  });
  return ({ topic, partition, lag }) => gauge.set({ topic, partition: String(partition) }, lag);
}

export type MetricsServer = { port: number; url: string; stop(): Promise<void> };

/**
 * A tiny HTTP server answering `GET /metrics` with `registry`, for a service that has no HTTP
 * app of its own (the turn worker). `port` 0: one the system chooses.
 */
export async function serveMetrics(registry: Registry, port: number, host = '0.0.0.0'): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}/metrics`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
