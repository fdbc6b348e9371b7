import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram } from 'prom-client';
import { inputIdsNamedBy, isKindEvent, KIND_OF_EVENT, type ConversationEvent, type KindEventType } from '@rudder/contracts';
import type { ModelClient } from '@rudder/agent';
import { consumerLag, createMetricsRegistry, type Pool } from '@rudder/runtime';

/** How many event ids are remembered to count a republished event once (the relay may publish twice). */
const REMEMBERED_EVENTS = 20_000;
const REMEMBERED_TURNS = 10_000;

/**
 * The turn worker's Prometheus metrics. Decisions and turns are counted from the events the
 * outbox relay publishes (`published`), each event id once: what is counted is what the log
 * holds, not what a retried attempt tried. Model requests are timed around the agents' model
 * clients (`timed`); the outbox backlog is read from the event log when scraped.
 */
export class WorkerMetrics {
  readonly registry = createMetricsRegistry('turn-worker');
  private readonly inputs = new Counter({
    name: 'rudder_inputs_total',
    help: 'Inputs decided by the worker, by kind (chat, steer, stop, retract, promote, grant, approval, …) and decision (accepted, or the refusal code)',
    labelNames: ['kind', 'decision'],
    registers: [this.registry],
  });
  private readonly steers = new Counter({
    name: 'rudder_steers_total',
    help: 'Steers decided: landed on the running turn (true) or answered as a turn of their own (false)',
    labelNames: ['landed'],
    registers: [this.registry],
  });
  private readonly steersTaken = new Counter({ name: 'rudder_steers_taken_total', help: 'Steered messages taken by a running turn at a step', registers: [this.registry] });
  private readonly turns = new Histogram({
    name: 'rudder_turn_duration_seconds',
    help: 'Turns from start to end, by how they ended (turns started on this worker)',
    labelNames: ['status'],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  private readonly modelRequests = new Histogram({
    name: 'rudder_model_request_duration_seconds',
    help: "Model requests (one streamed reply, the client's own retries included), by outcome (ok, error, aborted: a stop, a kill, or a request sent ahead and thrown away)",
    labelNames: ['outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  private readonly aheadRequests = new Counter({
    name: 'rudder_model_requests_ahead_total',
    help: "Model requests sent ahead of the commit of a step's last tool result, by outcome (used; discarded: the commit took a steer or ended the turn, a request paid for and not used)",
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly firstToken = new Histogram({
    name: 'rudder_model_time_to_first_token_seconds',
    help: 'From a model request to the first token of its reply',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly modelTokens = new Counter({
    name: 'rudder_model_tokens_total',
    help: 'Tokens the model reported, by kind (prompt, completion)',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  private readonly rebalances = new Counter({ name: 'rudder_rebalances_total', help: 'Partition assignments this worker received (one per consumer-group rebalance)', registers: [this.registry] });
  private readonly partitions = new Gauge({ name: 'rudder_partitions_owned', help: 'Partitions of agent.inputs this worker owns', registers: [this.registry] });
  private readonly fencedWrites = new Counter({
    name: 'rudder_fenced_total',
    help: 'Writes refused because another worker holds the partition now (this one was paused or cut off past its session)',
    registers: [this.registry],
  });
  private readonly guardFailures = new Counter({
    name: 'rudder_guard_failures_total',
    help: "Inputs an agent's input guard failed on, by agent and reason (error: it threw; timeout: no verdict within guardTimeoutMs); each is answered guard_failed",
    labelNames: ['agent', 'reason'],
    registers: [this.registry],
  });
  private readonly mcpUp = new Gauge({
    name: 'rudder_mcp_server_up',
    help: "Whether this worker is connected to an agent's MCP server (1), or not (0: the agent runs without its tools, and the server is retried)",
    labelNames: ['agent', 'server'],
    registers: [this.registry],
  });
  private readonly mcpDown = new Counter({
    name: 'rudder_mcp_server_down_total',
    help: "Times this worker found an agent's MCP server down (an attempt to connect failed: down) or lost its connection (lost)",
    labelNames: ['agent', 'server', 'how'],
    registers: [this.registry],
  });
  /** A batch of agent.inputs was handled: its partition's lag (`rudder_consumer_lag`). */
  readonly ingested = consumerLag(this.registry);
  private readonly seen = new Set<string>();
  private readonly startedAt = new Map<string, number>();

  private pools: readonly Pool[] = [];
  private reading: Promise<void> | undefined;

  constructor() {
    const read = () => this.readOutbox();
    this.backlog = new Gauge({ name: 'rudder_outbox_backlog', help: 'Stored events not yet published on agent.events (all workers)', registers: [this.registry], collect: read });
    this.oldest = new Gauge({ name: 'rudder_outbox_oldest_age_seconds', help: 'Age of the oldest stored event not yet published (0 when none)', registers: [this.registry], collect: read });
  }

  private readonly backlog: Gauge;
  private readonly oldest: Gauge;

  /** Where the outbox gauges are read from when scraped (the worker's pool). */
  private heldNow: () => number = () => 0;
  private readonly held: Gauge = new Gauge({
    name: 'rudder_conversations_held',
    help: 'Conversations this worker holds folded in memory (idle ones are let go after WORKER_IDLE_FORGET_MS)',
    registers: [this.registry],
    collect: (): void => this.held.set(this.heldNow()),
  });

  /** `held` counts the conversations in memory when scraped. */
  countHeld(held: () => number): void {
    this.heldNow = held;
  }

  /** The worker's pools, one per PostgreSQL primary: the gauges add up their backlogs and take the oldest age. */
  readOutboxFrom(pools: readonly Pool[]): void {
    this.pools = pools;
  }

  /** One query per primary per scrape serves both gauges. */
  private readOutbox(): Promise<void> {
    if (this.pools.length === 0) return Promise.resolve();
    return (this.reading ??= Promise.all(
      this.pools.map((pool) => pool.query<{ n: string; age: string | null }>('SELECT count(*) AS n, extract(epoch FROM now() - min(at)) AS age FROM event_store.outbox')),
    )
      .then((results) => {
        const rows = results.map(({ rows: [row] }) => ({ n: Number(row?.n ?? 0), age: Number(row?.age ?? 0) }));
        this.backlog.set(rows.reduce((sum, row) => sum + row.n, 0));
        this.oldest.set(Math.max(...rows.map((row) => row.age)));
      })
      .catch(() => undefined)
      .finally(() => setTimeout(() => (this.reading = undefined), 0)));
  }

  /** The events the relay published: each id counted once. Answers those it had not seen. */
  published(events: readonly ConversationEvent[]): ConversationEvent[] {
    const fresh: ConversationEvent[] = [];
    for (const event of events) {
      if (this.seen.has(event.id)) continue;
      remember(this.seen, event.id, REMEMBERED_EVENTS);
      this.count(event);
      fresh.push(event);
    }
    return fresh;
  }

  /** An agent's input guard threw (`error`) or ran past its budget (`timeout`) on an input. */
  guardFailed(agent: string, reason: 'error' | 'timeout'): void {
    this.guardFailures.inc({ agent, reason });
  }

  /** Whether the worker is connected to an agent's MCP server now. */
  mcpServerUp(agent: string, server: string, up: boolean): void {
    this.mcpUp.set({ agent, server }, up ? 1 : 0);
  }

  /** An agent's MCP server was found down, or its connection lost. */
  mcpServerDown(agent: string, server: string, how: 'down' | 'lost'): void {
    this.mcpDown.inc({ agent, server, how });
  }

  /** A write of this worker was fenced. */
  fenced(): void {
    this.fencedWrites.inc();
  }

  /** A rebalance gave this worker `owned` partitions. */
  assigned(owned: number): void {
    this.rebalances.inc();
    this.partitions.set(owned);
  }

  /** A model request sent ahead of a commit was used, or thrown away. */
  ahead(outcome: 'used' | 'discarded'): void {
    this.aheadRequests.inc({ outcome });
  }

  /** `model`, its requests timed and its tokens counted. */
  timed(model: ModelClient): ModelClient {
    return {
      reply: async (request) => {
        const start = performance.now();
        let first = true;
        const onToken = (text: string) => {
          if (first) {
            first = false;
            this.firstToken.observe((performance.now() - start) / 1000);
          }
          request.onToken?.(text);
        };
        try {
          const reply = await model.reply({ ...request, onToken });
          this.modelRequests.observe({ outcome: 'ok' }, (performance.now() - start) / 1000);
          if (reply.usage) {
            this.modelTokens.inc({ kind: 'prompt' }, reply.usage.promptTokens);
            this.modelTokens.inc({ kind: 'completion' }, reply.usage.completionTokens);
          }
          return reply;
        } catch (error) {
          this.modelRequests.observe({ outcome: request.signal?.aborted ? 'aborted' : 'error' }, (performance.now() - start) / 1000);
          throw error;
        }
      },
    };
  }

  private count(event: ConversationEvent): void {
    if (isKindEvent(event)) return this.countDecision(event);
    switch (event.type) {
      case 'input.accepted':
        return this.inputs.inc({ kind: event.data.input.kind, decision: 'accepted' });
      case 'input.rejected':
        return this.inputs.inc({ kind: event.data.input.kind, decision: event.data.code });
      case 'guard.failed':
        return this.inputs.inc({ kind: event.data.input.kind, decision: 'guard_failed' });
      case 'steer.accepted':
        return this.steers.inc({ landed: String(event.data.landed) });
      case 'steer.taken':
        return this.steersTaken.inc();
      case 'turn.started':
        remember(this.startedAt, event.data.turn, REMEMBERED_TURNS, Date.parse(event.at));
        return;
      case 'turn.ended': {
        const started = this.startedAt.get(event.data.turn);
        this.startedAt.delete(event.data.turn);
        if (started !== undefined) this.turns.observe({ status: event.data.status }, Math.max(0, Date.parse(event.at) - started) / 1000);
        return;
      }
      // Neither an input's decision nor a turn's start or end: not counted (model requests are, as they are made).
      case 'conversation.opened':
      case 'input.delivered':
      case 'model.replied':
      case 'answer.rejected':
      case 'history.compacted':
      case 'tool.started':
      case 'approval.requested':
      case 'tool.ended':
      case 'todos.updated':
      case 'agent.changed':
        return;
      default: {
        // Every type but the input kinds' own (`countDecision`) is named above (the compiler says which is not). One this code does not know
        // at run time — a newer worker's, which this one's relay publishes — is not counted.
        const _unknown: never = event;
        return;
      }
    }
  }

  /**
   * An input kind's event (`inputs/<kind>.ts` of @rudder/contracts) that answers an input is
   * the worker's decision on it: counted by that kind, `accepted` or its refusal's code. One
   * that answers none (a call denied by its timeout, an input a stop dropped) is not counted.
   */
  private countDecision(event: Extract<ConversationEvent, { type: KindEventType }>): void {
    if (inputIdsNamedBy(event).answers.length === 0) return;
    const code = (event.data as { code?: unknown }).code;
    this.inputs.inc({ kind: KIND_OF_EVENT[event.type], decision: typeof code === 'string' ? code : 'accepted' });
  }
}

function remember<K, V>(into: Set<K> | Map<K, V>, key: K, bound: number, value?: V): void {
  if (into instanceof Set) into.add(key);
  else into.set(key, value as V);
  if (into.size > bound) into.delete(into.keys().next().value as K);
}
