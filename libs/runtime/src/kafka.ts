import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, type Consumer, type ITopicConfig, type TopicPartitionOffset } from 'kafkajs';
import { createLog, kafkaLogCreator, kafkaLogLevel, type Log } from './log';
import { Topics } from '@rudder/contracts';
import { kafkajsRequestQueueMended } from './kafkajs-request-queue';

// Every producer here uses kafkajs' default partitioner, which is Java's murmur2: a service
// producing to agent.inputs with Kafka's own clients puts a conversation on the same partition.
// Its "switched default partitioner" notice is about kafkajs 1.x migrations, so silence it.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

/** A Kafka client whose logs go through `log` (default: a log of its own, named `clientId`). */
export function createKafka(brokers: string, clientId: string, log: Log = createLog(clientId)): Kafka {
  if (!kafkajsRequestQueueMended) warnUnmendedOnce(log);
  return new Kafka({
    clientId,
    brokers: brokers.split(',').map((b) => b.trim()),
    logLevel: kafkaLogLevel(),
    logCreator: kafkaLogCreator(log),
    retry: { initialRetryTime: 100, retries: 10 },
  });
}

let warnedUnmended = false;
function warnUnmendedOnce(log: Log): void {
  if (warnedUnmended) return;
  warnedUnmended = true;
  log.warn("this kafkajs is not the version whose request queue is mended (kafkajs-request-queue.ts): each connection may check for pending requests every millisecond");
}

export type TopicNames = { [K in keyof typeof Topics]: string };

/** The contract's topic names under a namespace (empty in production). */
/**
 * The PostgreSQL channel the workers announce what each commit stored on, as it commits
 * (`LISTEN`/`NOTIFY`; docs/architecture.md, "The shortest path"): one per
 * namespace, as the topics are. A channel name is an identifier of at most 63 bytes, so the
 * namespace is in it by its digest.
 */
export const announcementChannel = (namespace: string): string => `rudder_announcements_${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`;

export const topicNames = (namespace: string): TopicNames => ({
  inputs: namespace + Topics.inputs,
  events: namespace + Topics.events,
  tokens: namespace + Topics.tokens,
  inputsDlq: namespace + Topics.inputsDlq,
  eventsDlq: namespace + Topics.eventsDlq,
});

/**
 * Creates the contract's topics when they are missing. `agent.inputs`, `agent.events` and
 * `agent.tokens` share the partition count, so a conversation lands on the same partition
 * number of each. On a cluster of three brokers or more each topic has three replicas and
 * `min.insync.replicas` 2 (every producer here but the tokens' sends with acks=all, so an
 * acknowledged record is on two brokers and one broker may be down); on fewer, the brokers'
 * defaults.
 */
export async function ensureTopics(kafka: Kafka, topics: TopicNames, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Right after a cluster starts (or a topic is created) a broker may not know of a topic yet
    // ("does not host this topic-partition"): retried until every partition has a leader.
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = new Set(await admin.listTopics());
        const { brokers } = await admin.describeCluster();
        const replication: Pick<ITopicConfig, 'replicationFactor' | 'configEntries'> =
          brokers.length >= 3 ? { replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] } : { replicationFactor: -1 };
        const wanted: ITopicConfig[] = Object.values(topics)
          .filter((topic) => !existing.has(topic))
          .map((topic) => ({ topic, numPartitions: partitions, ...replication }));
        if (wanted.length > 0) await admin.createTopics({ topics: wanted, waitForLeaders: true });
        const metadata = await admin.fetchTopicMetadata({ topics: Object.values(topics) });
        if (metadata.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
        throw Object.assign(new Error('a topic has partitions without a leader yet'), { retriable: true });
      } catch (error) {
        if (attempt >= 40 || (error as { retriable?: boolean }).retriable !== true) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  } finally {
    await admin.disconnect();
  }
}

/**
 * Session settings of the read side's consumers (companion, gateway): a member that died is
 * replaced after 6 s rather than kafkajs' default 30 s, during which the group would wait. A
 * fetch returns as soon as a record arrives; `maxWaitTimeInMs` only bounds an idle one, and so
 * how long a stop waits for it (kafkajs' default of 5 s made every companion stop take seconds).
 */
export const READER_SESSION = { sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 500 } as const;

/**
 * Offsets committed at most every `everyMs`, for a consumer that may commit late (a redelivered
 * record changes nothing for it): run it with `autoCommit: false`, tell each handled record
 * (`handled`), call `due` after each batch, and `flush` before it disconnects.
 *
 * Why not kafkajs' `autoCommitInterval`: with `autoCommit` on, kafkajs commits after every
 * batch whatever the interval says (its runner calls `autoCommitOffsets` at each batch's end).
 * Measured at saturation (67 turns/s): the gateway's consumer sent 133 OffsetCommit requests a
 * second and the companion's 80, each one a write to `__consumer_offsets`.
 *
 * What is still uncommitted is committed by a timer too, so a quiet consumer's offsets reach
 * the end within `everyMs`. A new assignment forgets what was handled before it (those
 * partitions may be another member's now: committing them would move that member's offsets
 * back). A failed commit is dropped: the records after the last commit are read again.
 */
export function periodicCommits(consumer: Consumer, everyMs: number, log: Log) {
  let handled = new Map<string, TopicPartitionOffset>();
  let last = Date.now();
  let inFlight: Promise<void> | null = null;
  const commit = (): Promise<void> => {
    if (inFlight) return inFlight;
    if (handled.size === 0) return Promise.resolve();
    const offsets = [...handled.values()];
    handled = new Map();
    last = Date.now();
    inFlight = consumer
      .commitOffsets(offsets)
      .catch((error: unknown) => log.debug('committing offsets failed; the records after the last commit will be read again', { error: String(error) }))
      .finally(() => (inFlight = null));
    return inFlight;
  };
  const timer = setInterval(() => {
    if (Date.now() - last >= everyMs) void commit();
  }, everyMs);
  timer.unref();
  consumer.on(consumer.events.GROUP_JOIN, () => handled.clear());
  return {
    /** The record at `offset` is handled: the partition's committed offset may move past it. */
    handled(topic: string, partition: number, offset: string): void {
      handled.set(`${partition}\u0000${topic}`, { topic, partition, offset: (BigInt(offset) + 1n).toString() });
    },
    /** Commits what was handled if the last commit is `everyMs` old. */
    due: (): Promise<void> => (Date.now() - last >= everyMs ? commit() : Promise.resolve()),
    /** Commits what was handled, and stops the timer. */
    async flush(): Promise<void> {
      clearInterval(timer);
      await inFlight;
      await commit();
    },
  };
}
export type PeriodicCommits = ReturnType<typeof periodicCommits>;

export type KeptConsumer = { stop(): Promise<void> };

/**
 * Runs a consumer and keeps it running. kafkajs gives up on a consumer after an error it deems
 * non-retriable — "Failed to find group coordinator" while a broker restarts, say — and does
 * not restart it (tulios/kafkajs#1630): the process would stay up and silently stop consuming.
 * Then this disconnects it and starts a new one in the same group, retrying until it runs.
 * `run` connects, subscribes, registers listeners and calls `consumer.run`; the first start's
 * failure is thrown to the caller.
 */
export async function keepConsuming(options: {
  create: () => Consumer;
  run: (consumer: Consumer) => Promise<void>;
  log: Log;
  retryMs?: number;
}): Promise<KeptConsumer> {
  const { log } = options;
  let current: Consumer | null = null;
  let stopped = false;

  const start = async () => {
    const consumer = options.create();
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || stopped || current !== consumer) return;
      log.error('the consumer stopped for good after an error; starting a new one', { error: String(payload.error) });
      current = null;
      void consumer
        .disconnect()
        .catch(() => undefined)
        .then(restart);
    });
    current = consumer;
    try {
      await options.run(consumer);
    } catch (error) {
      current = null;
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
  };
  const restart = async () => {
    while (!stopped) {
      try {
        await start();
        return;
      } catch (error) {
        log.error('starting the consumer failed; retrying', { error: String(error) });
        await sleep(options.retryMs ?? 1000);
      }
    }
  };

  await start();
  return {
    async stop() {
      stopped = true;
      await current?.disconnect().catch(() => undefined);
    },
  };
}
