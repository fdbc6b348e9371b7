import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, type Consumer, type ITopicConfig, type TopicPartitionOffset } from 'kafkajs';
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
 *
 * Returns once every broker itself names every topic, each partition with a leader
 * (`brokerKnows`). Each broker learns of a new topic from the controllers' log in its own time;
 * until it has, it answers UNKNOWN_TOPIC_OR_PARTITION ("This server does not host this
 * topic-partition"), and kafkajs' `consumer.subscribe` through it fails at once (its
 * `Cluster.addMultipleTargetTopics` does not retry that).
 */
export async function ensureTopics(kafka: Kafka, topics: TopicNames, partitions: number): Promise<void> {
  const names = Object.values(topics);
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Topics seen or created once are not created again when a broker that answers later does not know them yet.
    const existing = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      try {
        for (const topic of await admin.listTopics()) existing.add(topic);
        const { brokers } = await admin.describeCluster();
        const replication: Pick<ITopicConfig, 'replicationFactor' | 'configEntries'> =
          brokers.length >= 3 ? { replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] } : { replicationFactor: -1 };
        const wanted: ITopicConfig[] = names.filter((topic) => !existing.has(topic)).map((topic) => ({ topic, numPartitions: partitions, ...replication }));
        // Their leaders are waited for below, on every broker (kafkajs' waitForLeaders asks one).
        if (wanted.length > 0) await admin.createTopics({ topics: wanted, waitForLeaders: false });
        for (const { topic } of wanted) existing.add(topic);
        const known = await Promise.all(brokers.map(({ host, port }) => brokerKnows(`${host}:${port}`, names)));
        const behind = brokers.filter((_, i) => !known[i]).map((b) => b.nodeId);
        if (behind.length === 0) return;
        throw Object.assign(new Error(`broker ${behind.join(', ')} does not know every topic with a leader for each partition yet`), { retriable: true });
      } catch (error) {
        if (attempt >= TOPICS_ATTEMPTS || (error as { retriable?: boolean }).retriable !== true) throw error;
        await sleep(TOPICS_PAUSE_MS);
      }
    }
  } finally {
    await admin.disconnect();
  }
}

/** How often, and how far apart, `ensureTopics` looks again: 20 s in all. */
const TOPICS_ATTEMPTS = 100;
const TOPICS_PAUSE_MS = 200;

/**
 * Whether the broker at `address` itself names every topic of `topics`, each partition with a
 * leader. Asked through a client of its own whose only bootstrap broker is `address`: kafkajs
 * sends a client's first metadata request to that broker, and throws on a topic's or a
 * partition's error in the answer (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE). A broker
 * that refuses connections counts as knowing: it answers no one now, and a starting broker
 * serves clients only once it has caught up with the controllers' log.
 */
async function brokerKnows(address: string, topics: string[]): Promise<boolean> {
  const admin = new Kafka({ clientId: 'rudder-topics', brokers: [address], logLevel: logLevel.NOTHING, retry: { retries: 0 }, requestTimeout: 5000 }).admin();
  try {
    await admin.connect();
    const metadata = await admin.fetchTopicMetadata({ topics });
    return topics.every((topic) => metadata.topics.some((t) => t.name === topic && t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)));
  } catch (error) {
    return causes(error).some((cause) => (cause as { code?: unknown }).code === 'ECONNREFUSED');
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** `error` and its causes (kafkajs wraps what a retry gave up on). */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let cause = error; cause instanceof Error && chain.length < 10; cause = cause.cause) chain.push(cause);
  return chain;
}

/**
 * Whether a broker refused because it does not know a topic, or a partition's leader, yet: a
 * topic just created, whose metadata has not reached every broker (see `ensureTopics`).
 */
function topicUnknownYet(error: unknown): boolean {
  return causes(error).some((cause) => ['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE'].includes(String((cause as { type?: unknown }).type)));
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

/** The pause before a consumer refused for a topic a broker does not know yet starts again. */
const UNKNOWN_TOPIC_PAUSE_MS = 200;

/**
 * Runs a consumer and keeps it running. kafkajs gives up on a consumer after an error it deems
 * non-retriable — "Failed to find group coordinator" while a broker restarts, say — and does
 * not restart it (tulios/kafkajs#1630): the process would stay up and silently stop consuming.
 * Then this disconnects it and starts a new one in the same group, retrying until it runs.
 * `run` connects, subscribes, registers listeners and calls `consumer.run`. A first start that
 * a broker refused because it does not know a topic yet (`topicUnknownYet`: kafkajs'
 * `subscribe` does not retry that) is tried again for up to `unknownTopicMs` (default 30 s);
 * any other failure of the first start is thrown to the caller.
 */
export async function keepConsuming(options: {
  create: () => Consumer;
  run: (consumer: Consumer) => Promise<void>;
  log: Log;
  retryMs?: number;
  unknownTopicMs?: number;
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

  const giveUpAt = Date.now() + (options.unknownTopicMs ?? 30_000);
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      if (!topicUnknownYet(error) || Date.now() >= giveUpAt) throw error;
      if (attempt === 1) log.warn('a broker does not know the topics yet; starting the consumer again until it does', { error: String(error) });
      await sleep(UNKNOWN_TOPIC_PAUSE_MS);
    }
  }
  return {
    async stop() {
      stopped = true;
      await current?.disconnect().catch(() => undefined);
    },
  };
}
