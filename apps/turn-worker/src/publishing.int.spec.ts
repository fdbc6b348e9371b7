import { randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import type { ConversationEvent } from '@rudder/contracts';
import { createKafka, ensureTopics, topicNames } from '@rudder/runtime';
import { deafeningKafka } from '../../../test/support/deafening-kafka';
import { readTopic } from '../../../test/topic-reader';
import { connectPublishing } from './publishing';

const event = (conversation: string, position: number): ConversationEvent => ({
  v: 1,
  id: randomUUID(),
  conversation,
  position,
  at: new Date().toISOString(),
  type: 'conversation.opened',
  data: { owner: 'someone', agent: 'default' },
});

describe('publishing events', () => {
  it('after a send whose answers were lost, the next send is neither lost nor wedged', async () => {
    const brokers = inject('kafkaBrokers');
    const topics = topicNames(`publishing-${randomUUID().slice(0, 8)}.`);
    await ensureTopics(createKafka(brokers, 'publishing-spec-admin'), topics, 1);
    const network = deafeningKafka(brokers);
    const publishing = await connectPublishing(network.kafka, topics);
    try {
      const conversation = 'c-publishing';
      const [first, lost, next] = [event(conversation, 1), event(conversation, 2), event(conversation, 3)];
      await publishing.publishEvents([first]);
      // The broker writes `lost` (and each retry of it, as a duplicate), but its answers never come.
      network.deafen();
      await expect(publishing.publishEvents([lost])).rejects.toThrow();
      network.hear();
      // The relay publishes from the table after a failure: the lost one again with what was
      // committed since, in one send.
      await publishing.publishEvents([lost, next]);
      const records = await readTopic(brokers, topics.events, conversation, (read) => read.some((r) => r.headers['event-id'] === next.id));
      expect(records.map((r) => r.headers['event-id'])).toContain(next.id);
      expect(new Set(records.map((r) => r.headers['event-id']))).toEqual(new Set([first.id, lost.id, next.id]));
    } finally {
      await publishing.disconnect();
    }
  });

  it('a re-routed input goes to its conversation\'s partition unchanged, saying where it came from', async () => {
    const brokers = inject('kafkaBrokers');
    const topics = topicNames(`publishing-${randomUUID().slice(0, 8)}.`);
    await ensureTopics(createKafka(brokers, 'publishing-spec-admin'), topics, 2);
    const publishing = await connectPublishing(createKafka(brokers, 'publishing-spec'), topics);
    try {
      const message = { key: Buffer.from('c-stray'), value: Buffer.from('{"the":"input"}'), offset: '7', timestamp: '0', attributes: 0, headers: { 'trace-id': Buffer.from('t-1') } } as KafkaMessage;
      await publishing.reroute(0, [{ message, partition: 1 }]);
      const [record] = await readTopic(brokers, topics.inputs, 'c-stray', (read) => read.length > 0);
      expect(record).toMatchObject({ partition: 1, value: '{"the":"input"}', headers: { 'trace-id': 't-1', 'rerouted-from': '0:7' } });
    } finally {
      await publishing.disconnect();
    }
  });
});
