import { Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import type { Consumer, ConsumerConfig, Kafka, KafkaMessage } from 'kafkajs';
import { keepConsuming, periodicCommits, type KeptConsumer, type PeriodicCommits } from './kafka';
import type { Log } from './log';

/** What a `@EventPattern(<topic>)` handler of this transport receives: one slice of a fetched batch. */
export type PartitionBatch = {
  /** The contract's topic name (without the namespace), the handler's pattern. */
  topic: string;
  partition: number;
  messages: KafkaMessage[];
  /** Records of the partition after this slice, as of its fetch: the consumer's lag once the slice is handled. */
  lag: number;
};

/** What a `@EventPattern(ASSIGNED)` handler receives after every rebalance: the partitions this member owns now. */
export type PartitionsAssigned = {
  topic: string;
  partitions: ReadonlySet<number>;
  /** False once a newer assignment arrived (a handler retrying should give up then). */
  current(): boolean;
};

/** The pattern of the handler told about assignments (`@EventPattern(ASSIGNED)`). */
export const ASSIGNED = 'partitions.assigned';

export type KafkaBatchServerOptions = {
  kafka: Kafka;
  /** The contract's topic names, subscribed as `namespace + topic`; handlers use the names without it. */
  topics: readonly string[];
  namespace: string;
  consumer: ConsumerConfig;
  /** A fetched batch larger than this reaches the handler in slices (offsets committed after each). */
  maxBatchSize?: number;
  /**
   * How many partitions' batches are handled at once (kafkajs' `partitionsConsumedConcurrently`;
   * default 1). A partition's batches are always handled one after another, in order.
   */
  partitionsAtOnce?: number;
  /**
   * Commit the handled offsets at most this often instead of after every slice
   * (`periodicCommits`: still only offsets whose slice was handled; also when the consumer is
   * quiet, and at a stop). For handlers that skip what they handled before: a crash or a
   * rebalance redelivers up to this much.
   */
  commitEveryMs?: number;
  log: Log;
};

/**
 * A Nest microservice transport (`Server` + `CustomTransportStrategy`) for consumers that must
 * not lose or skip a record: each `@EventPattern(topic)` handler gets a whole slice of a
 * fetched batch of one partition, and the slice's offsets are committed only after the
 * handler's promise (or observable) completed. A handler that throws commits nothing: the
 * consumer stops there and kafkajs fetches the slice again, so redelivery is the only failure
 * mode and handlers are idempotent. `@EventPattern(ASSIGNED)` runs after every rebalance with
 * the partitions owned now (the turn worker takes its fencing epochs there); batches wait for
 * it. A consumer kafkajs gives up on is replaced (`keepConsuming`).
 *
 * Why not Nest's own Kafka transport: it hands handlers one message at a time and commits by
 * itself (or on the handler's return, per message), so there is no batch to store in one
 * transaction, no rebalance hook before consumption resumes, and no replacement of a consumer
 * that kafkajs stopped for good.
 */
export class KafkaBatchServer extends Server implements CustomTransportStrategy {
  private kept: KeptConsumer | null = null;
  private consumer: Consumer | null = null;
  /** The running consumer's commits, with `commitEveryMs`. */
  private commits: PeriodicCommits | null = null;
  /** Settles once the latest assignment's handler has run; batches wait for it. */
  private assignment: Promise<void> = Promise.resolve();
  private generation = 0;
  /** Set by close(): no slice starts after it (its records are read again by the next consumer). */
  private closing = false;
  /** The batches being handled (`eachBatch` calls not returned yet): close() waits for them. */
  private readonly batches = new Set<Promise<void>>();

  constructor(private readonly options: KafkaBatchServerOptions) {
    super();
  }

  async listen(callback: (error?: unknown) => void): Promise<void> {
    const { kafka, namespace, log } = this.options;
    const named = new Map(this.options.topics.map((topic) => [namespace + topic, topic]));
    try {
      this.kept = await keepConsuming({
        log,
        create: () => kafka.consumer(this.options.consumer),
        run: async (consumer) => {
          this.consumer = consumer;
          const every = this.options.commitEveryMs;
          const commits = every === undefined ? null : periodicCommits(consumer, every, log);
          void this.commits?.flush(); // a consumer kafkajs gave up on: its timer stops (its commit fails, read again)
          this.commits = commits;
          consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
            const generation = ++this.generation;
            const current = () => generation === this.generation;
            for (const [subscribed, topic] of named) {
              const partitions = new Set(payload.memberAssignment[subscribed] ?? []);
              const previous = this.assignment;
              this.assignment = previous.then(() => this.dispatch(ASSIGNED, { topic, partitions, current } satisfies PartitionsAssigned)).catch((error) => {
                log.error('the assignment handler failed', { topic, error: String(error) });
              });
            }
          });
          await consumer.connect();
          await consumer.subscribe({ topics: [...named.keys()], fromBeginning: true });
          await consumer.run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            partitionsConsumedConcurrently: this.options.partitionsAtOnce ?? 1,
            eachBatch: ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, uncommittedOffsets, isRunning, isStale }) => this.tracked(async () => {
              const topic = named.get(batch.topic)!;
              const size = this.options.maxBatchSize ?? batch.messages.length;
              for (let from = 0; from < batch.messages.length; from += size) {
                // After a rebalance or a seek the rest of this batch is not ours to handle; after close(), nothing is.
                if (!isRunning() || isStale() || this.closing) return;
                await this.assignment;
                const messages = batch.messages.slice(from, from + size);
                const lag = Math.max(0, Number(batch.highWatermark) - Number(messages[messages.length - 1].offset) - 1);
                await this.dispatch(topic, { topic, partition: batch.partition, messages, lag } satisfies PartitionBatch);
                const last = messages[messages.length - 1].offset;
                resolveOffset(last);
                if (commits) {
                  // A slice that ended after a rebalance is not ours to commit: the partition may be another member's.
                  if (!isStale()) commits.handled(batch.topic, batch.partition, last);
                  await commits.due();
                } else await commitOffsetsIfNecessary(uncommittedOffsets());
                await heartbeat();
              }
            }),
          });
        },
      });
      callback();
    } catch (error) {
      callback(error);
    }
  }

  /** Runs the handler of `pattern` to its end; throws what it throws. */
  private async dispatch(pattern: string, data: PartitionBatch | PartitionsAssigned): Promise<void> {
    // Patterns are plain strings (topic names, ASSIGNED), which Nest keeps as they are. Its
    // getHandlerByPattern would first try JSON.parse on the name, and build and throw away a
    // SyntaxError on every slice (3 % of the companion's CPU at saturation).
    const handler = this.messageHandlers.get(pattern) ?? null;
    if (!handler) {
      if (pattern !== ASSIGNED) throw new Error(`no @EventPattern('${pattern}') handler: nothing may be committed`);
      return;
    }
    await lastValueFrom(this.transformToObservable(await handler(data)), { defaultValue: undefined });
  }

  /** Runs one `eachBatch`, known to close() until it returns. */
  private async tracked(handle: () => Promise<void>): Promise<void> {
    const running = handle();
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    this.batches.add(settled);
    try {
      await running;
    } finally {
      this.batches.delete(settled);
    }
  }

  /**
   * Stops consuming: the slices in hand end (no other starts), then what was handled is
   * committed, then the consumer leaves. The commit must come before kafkajs' `stop()`, which
   * drops the consumer's group, after which a commit only fails (with `commitEveryMs`,
   * close() committed nothing, and up to that much was read again).
   */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.batches]);
    await this.commits?.flush();
    await this.kept?.stop();
    this.kept = null;
  }

  on(): never {
    throw new Error('KafkaBatchServer has no status events to listen to');
  }

  unwrap<T>(): T {
    if (!this.consumer) throw new Error('KafkaBatchServer is not listening yet');
    return this.consumer as T;
  }
}
