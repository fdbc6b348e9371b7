import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram } from 'prom-client';
import { createMetricsRegistry } from '@rudder/runtime';

type Request = { method: string; route?: { path?: string } };
type Response = { statusCode: number; once(event: 'finish' | 'close', listener: () => void): unknown };

/**
 * The gateway's Prometheus metrics, served at `GET /metrics`. Decisions on inputs are the
 * worker's to count (rudder_inputs_total there); here: the HTTP answers and the open streams.
 */
export class GatewayMetrics {
  readonly registry = createMetricsRegistry('gateway');
  private readonly sseClients = new Gauge({ name: 'rudder_sse_clients', help: 'Event streams open on this gateway', registers: [this.registry] });
  private readonly slowClientsDropped = new Counter({
    name: 'rudder_sse_slow_clients_dropped_total',
    help: 'Event streams dropped because their client read too slowly: the response held STREAM_BUFFER_BYTES unsent (the client resumes with Last-Event-ID)',
    registers: [this.registry],
  });
  private readonly requests = new Histogram({
    name: 'rudder_http_request_duration_seconds',
    help: 'HTTP requests by method, route (the template, `unmatched` for none) and status; an event stream counts when it closes',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  private readonly affordancesUnanswered = new Counter({
    name: 'rudder_affordances_unanswered_total',
    help: 'Follow-ups or recaps answered empty because the companion could not be asked (down, behind, or an unreadable answer), by kind; what the companion itself fails to make it counts (rudder_affordance_failures_total)',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  /** A follow-up or recap the companion did not answer: answered empty (`AffordancesController`). */
  affordanceUnanswered(kind: 'followups' | 'recap'): void {
    this.affordancesUnanswered.inc({ kind });
  }

  /** Express middleware: times every request until its answer is out (or the client went). */
  readonly timeRequests = (request: Request, response: Response, next: () => void): void => {
    const start = performance.now();
    let done = false;
    const observe = () => {
      if (done) return;
      done = true;
      const route = request.route?.path ?? 'unmatched';
      this.requests.observe({ method: request.method, route, status: String(response.statusCode) }, (performance.now() - start) / 1000);
    };
    response.once('finish', observe);
    response.once('close', observe);
    next();
  };

  /** An event stream was dropped past its buffer cap (`StreamBuffers`). */
  slowClientDropped(): void {
    this.slowClientsDropped.inc();
  }

  /** An event stream opened: counted until the returned function is called (once is enough; more change nothing). */
  streamOpened(release: () => void): () => void {
    this.sseClients.inc();
    let open = true;
    return () => {
      if (open) this.sseClients.dec();
      open = false;
      release();
    };
  }
}
