import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { quietLog } from '../../../test/support/companion/quiet-log';
import { createKafka, keepConsuming, READER_SESSION } from './kafka';
import { KafkaBatchServer, type PartitionBatch } from './kafka-batch-server';

/**
 * `keepConsuming`, and the transport built on it (the companion's and the turn workers'), on the run's Kafka, subscribing to a topic the broker does not know yet. A
 * broker that a new topic's metadata has not reached answers exactly so (kafkajs'
 * `Cluster.addMultipleTargetTopics` throws UNKNOWN_TOPIC_OR_PARTITION, "This server does not
 * host this topic-partition", and `consumer.subscribe` does not retry it); here the topic is
 * created only once the first start was refused, so the refusal is certain, not a race.
 */
const WAIT = { timeout: 30_000, interval: 50 };
const REFUSED = 'warn a broker does not know the topics yet';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe('keepConsuming', () => {
  it('starts a consumer whose subscribe the broker refuses because it does not know the topic yet, once the broker knows it', async () => {
    const kafka = createKafka(inject('kafkaBrokers'), 'keep-consuming-spec', quietLog());
    const topic = `keep-consuming-${randomUUID().slice(0, 8)}.records`;
    const log = quietLog();
    const seen: string[] = [];
    const starting = keepConsuming({
      log,
      create: () => kafka.consumer({ groupId: `${topic}.group`, allowAutoTopicCreation: false, ...READER_SESSION }),
      run: async (consumer) => {
        await consumer.connect();
        await consumer.subscribe({ topics: [topic], fromBeginning: true });
        await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
      },
    });
    void starting.then((kept) => cleanups.push(() => kept.stop()), () => undefined);

    // A start that gave up rejects here, with kafkajs' error.
    await Promise.race([starting, vi.waitFor(() => expect(log.lines.some((line) => line.startsWith(REFUSED))).toBe(true), WAIT)]);
    expect(log.lines.find((line) => line.startsWith(REFUSED))).toContain('This server does not host this topic-partition');

    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await starting;

    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    await producer.send({ topic, messages: [{ value: 'after the topic was known' }] });
    await vi.waitFor(() => expect(seen).toEqual(['after the topic was known']), WAIT);
  });

  it("KafkaBatchServer (the companion's and the workers' transport) listens once the broker knows its topics, instead of failing its start", async () => {
    const kafka = createKafka(inject('kafkaBrokers'), 'keep-consuming-spec', quietLog());
    const namespace = `keep-consuming-${randomUUID().slice(0, 8)}.`;
    const log = quietLog();
    const seen: string[] = [];
    const server = new KafkaBatchServer({ kafka, topics: ['records'], namespace, consumer: { groupId: `${namespace}group`, allowAutoTopicCreation: false, ...READER_SESSION }, log });
    server.addHandler('records', async (batch: PartitionBatch) => void seen.push(...batch.messages.map((m) => m.value!.toString())), true);
    const listening = new Promise<void>((resolve, reject) => void server.listen((error) => (error ? reject(error as Error) : resolve())));
    cleanups.push(() => server.close());

    await Promise.race([listening, vi.waitFor(() => expect(log.lines.some((line) => line.startsWith(REFUSED))).toBe(true), WAIT)]);
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic: `${namespace}records`, numPartitions: 1 }], waitForLeaders: true });
    await listening;

    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    await producer.send({ topic: `${namespace}records`, messages: [{ value: 'handled' }] });
    await vi.waitFor(() => expect(seen).toEqual(['handled']), WAIT);
  });
});
