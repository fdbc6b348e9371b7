import { Counter, Gauge, Histogram } from 'prom-client';
import type { ConversationEvent } from '@rudder/contracts';
import { createMetricsRegistry } from '@rudder/runtime';

/** The companion's Prometheus metrics, served at `GET /metrics` on its HTTP app. */
export class CompanionMetrics {
  readonly registry = createMetricsRegistry('companion');
  private readonly folded = new Counter({
    name: 'rudder_companion_events_folded_total',
    help: 'Events of agent.events folded into the read views (applied), or skipped as already applied (duplicate)',
    labelNames: ['result'],
    registers: [this.registry],
  });
  private readonly batches = new Histogram({
    name: 'rudder_companion_fold_duration_seconds',
    help: 'One fetched batch of agent.events folded (one transaction per slice)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly lag = new Gauge({
    name: 'rudder_companion_fold_lag_seconds',
    help: 'How old the newest event of the last folded batch was when it was folded (its `at` to now)',
    registers: [this.registry],
  });

  batchFolded(events: readonly ConversationEvent[], result: { applied: number; duplicates: number }, seconds: number, now = Date.now()): void {
    this.folded.inc({ result: 'applied' }, result.applied);
    this.folded.inc({ result: 'duplicate' }, result.duplicates);
    this.batches.observe(seconds);
    const newest = Math.max(...events.map((event) => Date.parse(event.at)).filter(Number.isFinite));
    if (Number.isFinite(newest)) this.lag.set(Math.max(0, now - newest) / 1000);
  }
}
