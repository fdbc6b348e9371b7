import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatInput } from '@rudder/contracts';
import { createKafka, topicNames } from '@rudder/runtime';
import { readTopic } from './topic-reader';
import { answered, startStack, type Stack } from './stack';
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
    const turn = await answered(stack.client, conversation, 'direct-1');
    expect(turn).toMatchObject({ status: 'completed', content: 'answer to from a service' });
  });

  it('records that do not parse go to agent.inputs.dlq with the reason, and the partition moves on', async () => {
    const conversation = `contract/poison-${Date.now()}`;
    const wrongKey = chat(`${conversation}-other`, 'p-2', 'wrong key');
    const poison = ['{not json', JSON.stringify({ v: 1, type: 'chat', id: 'p-1', conversation, messages: [] }), JSON.stringify(wrongKey)];
    await produce([...poison.map((value) => ({ key: conversation, value })), { key: conversation, value: JSON.stringify(chat(conversation, 'p-3', 'after the poison')) }]);
    const turn = await answered(stack.client, conversation, 'p-3');
    expect(turn.content).toBe('answer to after the poison');

    const topics = topicNames(stack.env.KAFKA_NAMESPACE);
    const dead = await readTopic(stack.env.KAFKA_BROKERS, topics.inputsDlq, conversation, (records) => records.length >= 3);
    expect(dead.map((r) => r.headers.reason)).toEqual([expect.stringMatching(/not JSON/), expect.stringMatching(/messages/), expect.stringMatching(/key/)]);
    // Each dead letter is the record as it was, naming where it came from.
    const sources = await readTopic(stack.env.KAFKA_BROKERS, topics.inputs, conversation, (records) => records.length >= 4);
    expect(dead.map((r) => ({ key: r.key, value: r.value, topic: r.headers['source-topic'], partition: r.headers['source-partition'], offset: r.headers['source-offset'] }))).toEqual(
      poison.map((value, i) => ({ key: conversation, value, topic: topics.inputs, partition: String(sources[i].partition), offset: sources[i].offset })),
    );
    expect(sources.slice(0, 3).map((r) => r.value)).toEqual(poison);
    expect(await stack.client.status(conversation)).toMatchObject({ running: null, queue: [], lastInputId: 'p-3' });
    expect((await stack.client.messages(conversation)).items.map((m) => m.text)).toEqual(['after the poison', 'answer to after the poison']);
  });
});
