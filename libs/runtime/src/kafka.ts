import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, type Consumer, type ITopicConfig } from 'kafkajs';
import { createLog, kafkaLogCreator, kafkaLogLevel, type Log } from './log';
import { Topics } from '@rudder/contracts';

// Every producer here uses kafkajs' default partitioner, which is Java's murmur2: a service
// producing to agent.inputs with Kafka's own clients puts a conversation on the same partition.
// Its "switched default partitioner" notice is about kafkajs 1.x migrations, so silence it.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

/** A Kafka client whose logs go through `log` (default: a log of its own, named `clientId`). */
export function createKafka(brokers: string, clientId: string, log: Log = createLog(clientId)): Kafka {
  return new Kafka({
    clientId,
    brokers: brokers.split(',').map((b) => b.trim()),
    logLevel: kafkaLogLevel(),
    logCreator: kafkaLogCreator(log),
    retry: { initialRetryTime: 100, retries: 10 },
  });
}

export type TopicNames = { [K in keyof typeof Topics]: string };

/** The contract's topic names under a namespace (empty in production). */
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
