import { Counter, Gauge, Histogram } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { ConversationEvent } from '@rudder/contracts';
import { consumerLag, createMetricsRegistry } from '@rudder/runtime';
import { Inputs } from '../read-models/entities';

/** The companion's Prometheus metrics, served at `GET /metrics` on its HTTP app. */
export class CompanionMetrics {
  readonly registry = createMetricsRegistry('companion');
  /** A batch of agent.events was folded: its partition's lag (`rudder_consumer_lag`). */
  readonly folding = consumerLag(this.registry);
  private readonly folded = new Counter({
    name: 'rudder_companion_events_folded_total',
    help: 'Events of agent.events folded into the read views (applied), or skipped as already applied (duplicate)',
    labelNames: ['result'],
    registers: [this.registry],
  });
  private readonly batches = new Histogram({
    name: 'rudder_companion_fold_duration_seconds',
    help: 'One fold of agent.events: one transaction, of the slices of partition batches handed over together',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly lag = new Gauge({
    name: 'rudder_companion_fold_lag_seconds',
    help: 'How old the newest event of the last folded batch was when it was folded (its `at` to now)',
    registers: [this.registry],
  });

  private readonly affordances = new Counter({
    name: 'rudder_affordances_total',
    help: 'Asks for follow-up suggestions or a recap, by kind and how each was answered: model (this companion asked), cache (made before), shared (another ask\'s model request), none (no turn ended yet), failed (answered empty), backoff (answered empty without asking: a failure at that position is remembered)',
    labelNames: ['kind', 'answer'],
    registers: [this.registry],
  });
  private readonly affordanceFailures = new Counter({
    name: 'rudder_affordance_failures_total',
    help: 'Follow-ups or recaps that could not be made (answered empty, not cached), by kind and reason: model (an error answer, 429 included, or no connection), timeout, garbage (not the JSON asked for), database, unconfigured (no model)',
    labelNames: ['kind', 'reason'],
    registers: [this.registry],
  });

  /**
   * The queues' depth across every conversation, read from the views when scraped (the partial
   * index on pending inputs serves it): follow-ups waiting to be turns (`chat`) and steers
   * waiting (`steer`: landed on the running turn and not taken yet, or not decided yet).
   */
  private readonly pending: Gauge;

  /** `readModels`: on every primary; the gauge adds them up. */
  constructor(readModels: readonly DataSource[]) {
    this.pending = new Gauge({
      name: 'rudder_pending_inputs',
      help: 'Inputs accepted and not answered yet, over every conversation, by kind (chat: a follow-up in the queue; steer: waiting for the running turn)',
      labelNames: ['kind'],
      registers: [this.registry],
      collect: async () => {
        const rows = await Promise.all(
          readModels.map((dataSource) =>
            dataSource
              .getRepository(Inputs)
              .createQueryBuilder('input')
              .select('input.kind', 'kind')
              .addSelect('count(*)::int', 'n')
              .where("input.state = 'pending'")
              .groupBy('input.kind')
              .getRawMany<{ kind: string; n: number }>(),
          ),
        )
          .then((shards) => shards.flat())
          .catch(() => null); // a database away: the gauge keeps its last reading
        if (!rows) return;
        for (const kind of ['chat', 'steer']) this.pending.set({ kind }, rows.filter((r) => r.kind === kind).reduce((sum, r) => sum + r.n, 0));
      },
    });
  }

  /** An ask for an affordance was answered (`AffordanceMaker`). */
  affordanceAnswered(kind: 'followups' | 'recap', answer: 'model' | 'cache' | 'shared' | 'none' | 'failed' | 'backoff'): void {
    this.affordances.inc({ kind, answer });
  }

  /** Making an affordance failed: each failed model request (or database error) once. */
  affordanceFailed(kind: 'followups' | 'recap', reason: 'model' | 'timeout' | 'garbage' | 'database' | 'unconfigured'): void {
    this.affordanceFailures.inc({ kind, reason });
  }

  batchFolded(events: readonly ConversationEvent[], result: { applied: number; duplicates: number }, seconds: number, now = Date.now()): void {
    this.folded.inc({ result: 'applied' }, result.applied);
    this.folded.inc({ result: 'duplicate' }, result.duplicates);
    this.batches.observe(seconds);
    const newest = Math.max(...events.map((event) => Date.parse(event.at)).filter(Number.isFinite));
    if (Number.isFinite(newest)) this.lag.set(Math.max(0, now - newest) / 1000);
  }
}
