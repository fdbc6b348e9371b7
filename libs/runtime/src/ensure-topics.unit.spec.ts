import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import type { Admin, ITopicConfig, Kafka, KafkaConfig } from 'kafkajs';
import { ensureTopics, topicNames } from './kafka';

// kafkajs' own error classes, as it throws them (its errors are not named exports an ESM import sees).
const { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } = createRequire(import.meta.url)('kafkajs') as typeof import('kafkajs');

/**
 * `ensureTopics` against a cluster of three fake brokers, each of which learns of a new topic
 * in its own time, as a KRaft broker does from the controllers' log: until then it answers a
 * metadata request for it UNKNOWN_TOPIC_OR_PARTITION, as kafkajs throws it. The admin client
 * `ensureTopics` is given asks whichever broker knows (kafkajs' `fetchTopicMetadata` takes the
 * first broker that answers); a client whose only bootstrap broker is one of them
 * (`new Kafka({ brokers: [address] })`, faked here) asks that broker.
 */
type FakeBroker = { nodeId: number; host: string; port: number; knows: Set<string>; asked: number; learnsAtAsk: number; refuses: boolean };

const cluster = vi.hoisted(() => ({ brokers: [] as FakeBroker[], created: [] as string[] }));

const unknownTopic = () =>
  new KafkaJSProtocolError({ type: 'UNKNOWN_TOPIC_OR_PARTITION', code: 3, retriable: true, message: 'This server does not host this topic-partition' } as unknown as Error);

const metadataOf = (topics: string[]) => ({
  topics: topics.map((name) => ({ name, partitions: [0, 1, 2].map((partitionId) => ({ partitionId, leader: 1, replicas: [1, 2, 3], isr: [1, 2, 3], partitionErrorCode: 0, offlineReplicas: [] })) })),
});

/** The admin of a client bootstrapped at one broker: its metadata is that broker's. */
function brokerAdmin(address: string): Admin {
  const broker = cluster.brokers.find((b) => `${b.host}:${b.port}` === address)!;
  return {
    connect: async () => {
      if (!broker.refuses) return;
      const refused = new KafkaJSConnectionError(`Connection error: connect ECONNREFUSED ${address}`, { code: 'ECONNREFUSED' } as never);
      throw new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 0, retryTime: 0, cause: refused } as never);
    },
    disconnect: async () => undefined,
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
      broker.asked += 1;
      if (broker.asked >= broker.learnsAtAsk) for (const topic of cluster.created) broker.knows.add(topic);
      if (!topics.every((topic) => broker.knows.has(topic))) throw unknownTopic();
      return metadataOf(topics);
    },
  } as unknown as Admin;
}

vi.mock('kafkajs', async (importOriginal) => {
  const kafkajs = await importOriginal<typeof import('kafkajs')>();
  class BootstrappedAtOneBroker {
    constructor(private readonly config: KafkaConfig) {}
    admin(): Admin {
      const brokers = this.config.brokers as string[];
      if (brokers.length !== 1) throw new Error('this fake only makes clients of one broker');
      return brokerAdmin(brokers[0]);
    }
  }
  return { ...kafkajs, Kafka: BootstrappedAtOneBroker };
});

/** A cluster whose brokers 1 and 2 know a topic as soon as it is created, and broker 3 at its `learnsAtAsk`-th metadata request. */
function startCluster(broker3: { learnsAtAsk?: number; refuses?: boolean }): Kafka {
  cluster.created = [];
  cluster.brokers = [1, 2, 3].map((nodeId) => ({
    nodeId,
    host: '127.0.0.1',
    port: 9090 + nodeId,
    knows: new Set<string>(),
    asked: 0,
    learnsAtAsk: nodeId === 3 ? (broker3.learnsAtAsk ?? 1) : 1,
    refuses: nodeId === 3 && broker3.refuses === true,
  }));
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    listTopics: async () => [...cluster.brokers[0].knows],
    describeCluster: async () => ({ brokers: cluster.brokers.map(({ nodeId, host, port }) => ({ nodeId, host, port })), controller: 1, clusterId: 'fake' }),
    createTopics: async ({ topics }: { topics: ITopicConfig[] }) => {
      for (const { topic } of topics) {
        cluster.created.push(topic);
        cluster.brokers[0].knows.add(topic);
        cluster.brokers[1].knows.add(topic);
      }
      return true;
    },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
      if (!cluster.brokers.some((b) => topics.every((topic) => b.knows.has(topic)))) throw unknownTopic();
      return metadataOf(topics);
    },
  };
  return { admin: () => admin } as unknown as Kafka;
}

const TOPICS = topicNames('ensure-spec.');

describe('ensureTopics', () => {
  it('returns only once every broker itself names every topic: a broker the new topics reach late is waited for', async () => {
    const kafka = startCluster({ learnsAtAsk: 3 });
    await ensureTopics(kafka, TOPICS, 3);
    for (const broker of cluster.brokers) expect([...broker.knows].sort(), `broker ${broker.nodeId}`).toEqual(Object.values(TOPICS).sort());
    expect(cluster.brokers[2].asked).toBe(3);
  });

  it('does not wait for a broker that refuses connections (a broker serves again only once it has caught up)', async () => {
    const kafka = startCluster({ refuses: true });
    await ensureTopics(kafka, TOPICS, 3);
    expect(cluster.created.sort()).toEqual(Object.values(TOPICS).sort());
    for (const broker of cluster.brokers.slice(0, 2)) expect(broker.asked, `broker ${broker.nodeId}`).toBeGreaterThan(0);
  });
});
