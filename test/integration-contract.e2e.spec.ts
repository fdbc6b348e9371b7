import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import type { ChatInput } from '@rudder/contracts';
import { createKafka, topicNames } from '@rudder/runtime';
import { eventually, startStack, type Stack } from './stack';
import { testScript } from './scripts';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

async function produce(messages: { key: string; value: string }[]) {
  const producer = createKafka(stack.env.KAFKA_BROKERS, 'another-service').producer();
  await producer.connect();
  await producer.send({ topic: topicNames(stack.env.KAFKA_NAMESPACE).inputs, messages });
  await producer.disconnect();
}

const chat = (conversation: string, id: string, text: string): ChatInput => ({
  v: 1,
  type: 'chat',
  id,
  conversation,
  subject: 'billing-service',
  messages: [text],
  onBusy: 'enqueue',
  sentAt: new Date().toISOString(),
});

describe('the topics as an integration contract', () => {
  it('a chat another service produces to agent.inputs itself is answered', async () => {
    const conversation = `contract/direct-${Date.now()}`;
    await produce([{ key: conversation, value: JSON.stringify(chat(conversation, 'direct-1', 'from a service')) }]);
    const turn = await stack.client.answered(conversation, 'direct-1');
    expect(turn).toMatchObject({ status: 'completed', content: 'answer to from a service' });
  });

  it('records that do not parse go to agent.inputs.dlq with the reason, and the partition moves on', async () => {
    const conversation = `contract/poison-${Date.now()}`;
    const wrongKey = chat(`${conversation}-other`, 'p-2', 'wrong key');
    await produce([
      { key: conversation, value: '{not json' },
      { key: conversation, value: JSON.stringify({ v: 1, type: 'chat', id: 'p-1', conversation, messages: [] }) },
      { key: conversation, value: JSON.stringify(wrongKey) },
      { key: conversation, value: JSON.stringify(chat(conversation, 'p-3', 'after the poison')) },
    ]);
    const turn = await stack.client.answered(conversation, 'p-3');
    expect(turn.content).toBe('answer to after the poison');

    const consumer = createKafka(stack.env.KAFKA_BROKERS, 'dlq-reader').consumer({ groupId: `dlq-reader-${Date.now()}` });
    const dead: KafkaMessage[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: topicNames(stack.env.KAFKA_NAMESPACE).inputsDlq, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void dead.push(message) });
    const reasons = await eventually(async () => {
      const ours = dead.filter((m) => m.key?.toString() === conversation);
      return ours.length >= 3 ? ours.map((m) => m.headers!.reason!.toString()) : undefined;
    });
    await consumer.disconnect();
    expect(reasons).toHaveLength(3);
    expect(reasons[0]).toMatch(/not JSON/);
    expect(reasons[1]).toMatch(/messages/);
    expect(reasons[2]).toMatch(/key/);
    const status = await stack.client.status(conversation);
    expect(status.body).toMatchObject({ running: null, queue: [], lastInputId: 'p-3' });
    expect((await stack.client.messages(conversation)).body.items.map((m) => m.text)).toEqual(['after the poison', 'answer to after the poison']);
  });
});
