import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import type { ChatInput } from '@rudder/contracts';
import { createKafka, createLog, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { deafeningKafka } from '../../../../test/support/deafening-kafka';
import { readTopic } from '../../../../test/topic-reader';
import { InputsPublisher } from './inputs-publisher';

const chat = (conversation: string, n: number): ChatInput => ({
  v: 1,
  type: 'chat',
  id: `${conversation}-${n}`,
  conversation,
  subject: 'anonymous',
  messages: [`message ${n}`],
  onBusy: 'enqueue',
  sentAt: new Date().toISOString(),
});

describe('producing inputs', () => {
  it('concurrent inputs share produce requests, and each conversation\'s records keep the order they were sent in', async () => {
    const brokers = inject('kafkaBrokers');
    const namespace = `publisher-${randomUUID().slice(0, 8)}.`;
    const topics = topicNames(namespace);
    await ensureTopics(createKafka(brokers, 'publisher-spec-admin'), topics, 3);
    const kafka = createKafka(brokers, 'publisher-spec');
    const config = readConfig({ KAFKA_BROKERS: brokers, DATABASE_URL: '-', KAFKA_NAMESPACE: namespace });
    const publisher = new InputsPublisher(kafka, config, createLog('publisher-spec'));
    let produceRequests = 0;
    const producer = (publisher as unknown as { producer: { on(event: string, listener: (e: { payload: { apiName: string } }) => void): void; events: { REQUEST: string } } }).producer;
    producer.on(producer.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'Produce') produceRequests++;
    });
    await publisher.onModuleInit();
    try {
      const conversations = ['c-a', 'c-b', 'c-c', 'c-d'].map((c) => `${c}-${randomUUID().slice(0, 6)}`);
      const sent = conversations.flatMap((c) => Array.from({ length: 25 }, (_, n) => chat(c, n)));
      // Sent at once, interleaved across conversations, as concurrent HTTP requests would be.
      const order = conversations.flatMap((_, i) => sent.filter((_, j) => j % conversations.length === i));
      await Promise.all(order.map((input) => publisher.publish(input)));
      expect(produceRequests).toBeGreaterThan(0);
      expect(produceRequests).toBeLessThan(order.length / 4);
      for (const conversation of conversations) {
        const records = await readTopic(brokers, topics.inputs, conversation, (read) => read.length >= 25);
        const ids = records.map((r) => (JSON.parse(r.value) as ChatInput).id);
        const inSendOrder = order.filter((input) => input.conversation === conversation).map((input) => input.id);
        expect(ids).toEqual(inSendOrder);
      }
    } finally {
      await publisher.onApplicationShutdown();
    }
  });

  it('after a send whose answers were lost (503), the next input is written, not acknowledged as a duplicate and lost', async () => {
    const brokers = inject('kafkaBrokers');
    const namespace = `inputs-publisher-${randomUUID().slice(0, 8)}.`;
    const topics = topicNames(namespace);
    await ensureTopics(createKafka(brokers, 'inputs-publisher-admin'), topics, 1);
    const network = deafeningKafka(brokers, 'inputs-publisher-spec');
    const publisher = new InputsPublisher(network.kafka, readConfig({ KAFKA_BROKERS: brokers, KAFKA_NAMESPACE: namespace, DATABASE_URL: '-' }), createLog('publisher-spec'));
    await publisher.onModuleInit();
    try {
      const conversation = 'c-inputs';
      await publisher.publish(chat(conversation, 1));
      // The broker writes the second (and each retry of it, as a duplicate), but its answers never come.
      network.deafen();
      await expect(publisher.publish(chat(conversation, 2))).rejects.toMatchObject({ code: 'unavailable' });
      network.hear();
      // The client's next input: acknowledged means written.
      await publisher.publish(chat(conversation, 3));
      const records = await readTopic(brokers, topics.inputs, conversation, (read) => read.some((r) => (JSON.parse(r.value) as ChatInput).id === `${conversation}-3`));
      expect(records.map((r) => (JSON.parse(r.value) as ChatInput).id)).toContain(`${conversation}-3`);
    } finally {
      await publisher.onApplicationShutdown();
    }
  });
});
