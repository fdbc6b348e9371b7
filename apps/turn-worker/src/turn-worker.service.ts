import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { AnnouncementGate, conversationsWithOpenWork, createShardedRelay, notificationQueueUsage, FencedError, migrateEventStore, MovedPartitionError, PartitionBusyError, registerAgents, takePartitions, type Epochs, type ShardedRelay } from '@rudder/event-store';
import { configuredShards, createKafka, createLog, createPool, announcementChannel, hop, ensureTopics, oneShard, serveMetrics, sharded, startTracing, stopTracing, topicNames, type Config, type Log, type MetricsServer, type PartitionBatch, type PartitionsAssigned, type Pool, type Sharded } from '@rudder/runtime';
import type { ConversationEvent } from '@rudder/contracts';
import { AgentRegistry } from './agents/agents';
import { faultPoints } from './fault-points';
import { rememberInputTraces } from './tracing/input-traces';
import { InputIngest } from './ingest/ingest-inputs';
import { connectPublishing, type Publishing } from './publishing';
import { createScheduler, type Scheduler } from './turns/scheduler';
import { createDeadlines, type Deadlines } from './turns/deadlines';
import { createHeldEpochs, type HeldEpochs } from './turns/held-epochs';
import { TurnStore } from './turns/turn-store';
import { WorkerMetrics } from './metrics/worker-metrics';
import { TURN_WORKER_OPTIONS, type TurnWorkerOptions } from './turn-worker.options';

/**
 * The turn worker: one member of the `turn-workers` consumer group. It ingests the inputs of
 * the partitions it owns into the event log, runs their conversations' turns, and relays the
 * events it stored to agent.events. The Kafka consumer is the microservice's transport
 * (KafkaBatchServer); this service is what its handlers call. With several PostgreSQL primaries
 * (DATABASE_URLS) every read and write of a conversation goes to its partition's primary
 * (`shardMap`): the event store is migrated on each, epochs are taken, the outbox relayed and
 * deadlines read on each for the owned partitions it holds.
 */
@Injectable()
export class TurnWorker implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = createLog('turn-worker');
  private readonly config: Config;
  /** The event store's primaries, one pool each. */
  private readonly pools: Sharded<Pool>;
  private readonly workerId = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  private publishing!: Publishing;
  private relay!: ShardedRelay;
  private scheduler!: Scheduler;
  private deadlines!: Deadlines;
  private inputs!: InputIngest;
  private fault = faultPoints({});
  private owned: ReadonlySet<number> = new Set();
  private epochs: Epochs = new Map();
  private held!: HeldEpochs;
  private metricsServer: MetricsServer | undefined;
  /** The announcement channel, while PostgreSQL's notification queue has room: what every write stores is announced there as it commits (docs/architecture.md, "The shortest path"). */
  private announcements!: AnnouncementGate;

  constructor(
    @Inject(TURN_WORKER_OPTIONS) private readonly options: TurnWorkerOptions & { config: Config },
    @Inject(AgentRegistry) private readonly agents: AgentRegistry,
    @Inject(WorkerMetrics) private readonly metrics: WorkerMetrics,
  ) {
    this.config = options.config;
    const shards = configuredShards(this.config);
    if (options.pool && shards.urls.length > 1) throw new Error('a pool given by hand serves one PostgreSQL primary; DATABASE_URLS names several');
    this.pools = options.pool ? oneShard(options.pool, this.config.KAFKA_PARTITIONS) : sharded(shards, (url) => createPool(url));
    metrics.readOutboxFrom(this.pools.all);
  }

  async onApplicationBootstrap(): Promise<void> {
    const { config, log } = this;
    startTracing('turn-worker');
    this.fault = faultPoints({ crashAt: config.CRASH_AT, pauseAt: config.PAUSE_AT });
    const topics = topicNames(config.KAFKA_NAMESPACE);
    const { pools } = this;
    for (const url of this.options.pool ? [config.DATABASE_URL] : pools.urls) await migrateEventStore(url);
    // One gate: announcing stops while any primary's notification queue is past its mark.
    const usages = pools.all.map(notificationQueueUsage);
    this.announcements = new AnnouncementGate(announcementChannel(config.KAFKA_NAMESPACE), async () => Math.max(...(await Promise.all(usages.map((usage) => usage())))), { log });
    // The companion makes the follow-ups and recaps of these agents' conversations with their settings (on every primary: it reads them where it folds).
    for (const pool of pools.all) await registerAgents(pool, this.agents.affordances());
    const kafka = createKafka(config.KAFKA_BROKERS, 'turn-worker', log);
    await ensureTopics(kafka, topics, config.KAFKA_PARTITIONS);
    this.publishing = await connectPublishing(kafka, topics);
    this.relay = createShardedRelay(pools, {
      publish: (events, traces) => this.publishing.publishEvents(events, traces).then(() => logOutcomes(log, this.metrics.published(events))),
      ownedPartitions: () => [...this.owned],
      afterPublish: () => this.fault('after-publish'),
      log,
    });
    this.held = createHeldEpochs({ pools, epochs: () => this.epochs, sessionTimeoutMs: config.WORKER_SESSION_TIMEOUT_MS });
    const announce = () => this.announcements.channel();
    const store = new TurnStore({ pools, held: this.held, relay: this.relay, announce, wakeAt: (dueAt) => this.deadlines.wakeAt(dueAt) });
    this.scheduler = createScheduler(
      { store, agents: this.agents, tokens: this.publishing, metrics: this.metrics, options: { log, fault: this.fault, retryMs: 1000, snapshotEvery: config.WORKER_SNAPSHOT_EVERY_EVENTS } },
      config.WORKER_IDLE_FORGET_MS,
    );
    this.deadlines = createDeadlines({ pools, owned: () => [...this.owned], poke: (due) => this.scheduler.poke(due), log });
    this.inputs = new InputIngest({
      pools,
      epochs: () => this.epochs,
      agents: this.agents,
      seen: this.scheduler.seen,
      guardFailed: (failure, partition) => {
        // Its own error is logged here, never published: the input's answer says only that the guard failed.
        this.log.error('an input guard failed; the input is answered guard_failed and may be sent again', { ...failure, partition });
        this.metrics.guardFailed(failure.agent, failure.reason);
      },
      announce,
    });
    this.metrics.countHeld(() => this.scheduler.held());
    if (config.METRICS_PORT !== undefined) {
      this.metricsServer = await serveMetrics(this.metrics.registry, config.METRICS_PORT);
      log.info('metrics served', { url: this.metricsServer.url });
    }
    log.info('turn worker started', { group: `${config.KAFKA_NAMESPACE}turn-workers`, topic: topics.inputs, agents: this.options.agents.map((a) => a.name) });
  }

  /** A batch of agent.inputs: stored durably before the transport commits its offsets. */
  async ingest(batch: PartitionBatch): Promise<void> {
    hop('worker.input-batch');
    const { partition, messages } = batch;
    rememberInputTraces(messages);
    const sentAt = this.held.now();
    const { stored, before, trace, conversations, news, rejected, misrouted } = await this.inputs.batch(partition, messages).catch((error: unknown) => {
      if (error instanceof FencedError) this.metrics.fenced();
      throw error;
    });
    // What it stored passed the epoch check: the partition was this worker's when the ingest began.
    hop('worker.ingested');
    if (stored.length > 0) this.held.proven(partition, sentAt);
    this.relay.enqueue({ stored, before, trace }, partition);
    // A conversation stays on the partition where it was first seen: its records that came
    // here (a producer with another partitioner) go there, and are ingested by its owner.
    await this.publishing.reroute(partition, misrouted);
    for (const { message, partition: to } of misrouted) this.log.warn('input re-routed to its conversation\'s partition', { partition, offset: message.offset, to });
    await this.publishing.deadLetter(partition, rejected);
    for (const { reason, message } of rejected) this.log.warn('input dead-lettered', { partition, offset: message.offset, reason });
    this.fault('after-ingest');
    this.scheduler.poke(conversations.map((conversation) => ({ conversation, partition, news: news.get(conversation) })));
    // A stop or a rollback aborts the running turn now; an interrupt or a graceful stop winds its tools down, and it ends at its next step.
    for (const event of stored) {
      if (event.type !== 'stop.requested' || !event.data.turn) continue;
      if (event.data.mode === 'stop' || event.data.mode === 'rollback') this.scheduler.stopTurn(event.conversation, partition);
      else this.scheduler.windDown(event.conversation, event.data.turn);
    }
    this.metrics.ingested(batch);
  }

  /**
   * After every rebalance, before any batch: lets go of what moved, then takes the epochs of
   * the partitions owned now. Kafka's assignment is the full new set each time; a partition
   * this worker also had before keeps its epoch (its in-flight commits stay valid) unless the
   * store says someone took it in between (`takePartitions`), so a rebalance that leaves a
   * partition where it was fences nothing and reruns nothing.
   */
  async assigned({ partitions, current }: PartitionsAssigned): Promise<void> {
    this.owned = partitions;
    this.metrics.assigned(partitions.size);
    this.log.info('partitions assigned', { partitions: [...partitions] });
    await this.scheduler.keepOnly(partitions);
    // Until the epochs are taken nothing of these partitions is written; retry while they are ours.
    while (current()) {
      try {
        const sentAt = this.held.now();
        this.epochs = await this.takeEpochs(partitions);
        for (const partition of partitions) this.held.proven(partition, sentAt);
        this.log.info('epochs taken', { epochs: Object.fromEntries(this.epochs) });
        this.relay.sweep();
        const open = await Promise.all([...this.pools.byShard(partitions)].map(([shard, some]) => conversationsWithOpenWork(this.pools.all[shard], some)));
        this.scheduler.poke(open.flat());
        this.deadlines.rearm();
        return;
      } catch (error) {
        // PartitionBusyError: a write in flight under an old epoch (a paused zombie) still holds
        // the row; the writers' idle timeout ends it, so retrying gets the epoch.
        if (error instanceof PartitionBusyError) this.log.warn('a write in flight still holds an assigned partition; retrying', { error: error.message });
        // MovedPartitionError: this worker runs with the map from before the primaries grew; it writes nothing of these partitions until restarted.
        else if (error instanceof MovedPartitionError) this.log.error('an assigned partition was moved to another primary; restart this worker with the new DATABASE_URLS', { error: error.message });
        else this.log.error('taking the assigned partitions failed; retrying', { error: String(error) });
        await sleep(1000);
      }
    }
  }

  /**
   * The epochs of `partitions`, each taken on its own primary (`takePartitions` there: one
   * transaction per primary, none spanning two); those of the partitions not asked for are let go.
   */
  private async takeEpochs(partitions: ReadonlySet<number>): Promise<Epochs> {
    const taken = await Promise.all(
      [...this.pools.byShard(partitions)].map(([shard, some]) => {
        const held = new Map([...this.epochs].filter(([partition]) => this.pools.shardOf(partition) === shard));
        return takePartitions(this.pools.all[shard], some, this.workerId, held);
      }),
    );
    return new Map(taken.flatMap((epochs) => [...epochs]));
  }

  /** Running turns stop where they are (they resume on the partition's next owner); nothing more is written. */
  async onApplicationShutdown(): Promise<void> {
    this.deadlines?.stop();
    this.announcements?.stop();
    await this.scheduler?.stop();
    await this.relay?.stop();
    await this.publishing?.disconnect().catch(() => undefined);
    await this.metricsServer?.stop();
    if (!this.options.pool) await Promise.all(this.pools.all.map((pool) => pool.end()));
    await stopTracing();
  }
}

/** A line per turn started and ended, and per input refused, once each (as published): what "what became of my message" is answered from. */
function logOutcomes(log: Log, events: readonly ConversationEvent[]): void {
  for (const event of events) {
    const { conversation } = event;
    if (event.type === 'turn.started') log.info('turn started', { conversation, turn: event.data.turn, input: event.data.prompt.id });
    else if (event.type === 'turn.ended') log.info('turn ended', { conversation, turn: event.data.turn, status: event.data.status, steered: event.data.steered.map((s) => s.id) });
    else if (event.type === 'input.rejected') log.info('input refused', { conversation, input: event.data.input.id, code: event.data.code });
    else if (event.type === 'guard.failed') log.info('input undecided: its guard failed', { conversation, input: event.data.input.id, attempt: event.data.attempt });
  }
}
