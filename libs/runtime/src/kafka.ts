import { Kafka, logLevel, type ITopicConfig } from 'kafkajs';
import { Topics } from '@rudder/contracts';

// Every producer here uses kafkajs' default partitioner, which is Java's murmur2: a service
// producing to agent.inputs with Kafka's own clients puts a conversation on the same partition.
// Its "switched default partitioner" notice is about kafkajs 1.x migrations, so silence it.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

export function createKafka(brokers: string, clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers: brokers.split(',').map((b) => b.trim()),
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: 100, retries: 10 },
  });
}

/**
 * Creates the contract's topics when they are missing. `agent.inputs`, `agent.events` and
 * `agent.tokens` share the partition count, so a conversation lands on the same partition
 * number of each.
 */
export type TopicNames = { [K in keyof typeof Topics]: string };

/** The contract's topic names under a namespace (empty in production). */
export const topicNames = (namespace: string): TopicNames => ({
  inputs: namespace + Topics.inputs,
  events: namespace + Topics.events,
  tokens: namespace + Topics.tokens,
  inputsDlq: namespace + Topics.inputsDlq,
});

export async function ensureTopics(kafka: Kafka, topics: TopicNames, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted: ITopicConfig[] = Object.values(topics)
      .filter((topic) => !existing.has(topic))
      .map((topic) => ({ topic, numPartitions: partitions, replicationFactor: -1 }));
    if (wanted.length > 0) await admin.createTopics({ topics: wanted, waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}
