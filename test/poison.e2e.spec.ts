import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Consumer, KafkaMessage } from 'kafkajs';
import type { ChatInput } from '@rudder/contracts';
import { createKafka, topicNames } from '@rudder/runtime';
import { lastMessage, lastUserText, reply, type Script } from '@rudder/scripted-model';
import { answered, WAIT, startStack, type Stack } from './stack';

/**
 * Poison: what a stranger can send (or a model can answer) that PostgreSQL or Kafka refuses.
 * None of it may stop a partition: each conversation here shares its partition with the
 * next chat, which must be answered.
 */
const script: Script = (request) => {
  const text = lastUserText(request);
  if (lastMessage(request)?.role === 'tool') return reply.text(`after the tool: ${text}`);
  if (text === 'reply with NUL') return reply.text('a\u0000b \ud800 c \udc00 d 😀');
  if (text === 'call with NUL')
    return reply.tools([
      { id: 'c\u0000', name: 'wait', arguments: { ms: 1 } },
      { id: 'c\u0000', name: 'no\u0000such\ud800', arguments: { ms: 1 } },
    ]);
  return reply.text(`answer to ${text}`);
};

let stack: Stack;
let dlq: Consumer;
const deadLetters: KafkaMessage[] = [];
beforeAll(async () => {
  stack = await startStack({ script, workerEnv: { KAFKA_PARTITIONS: '1' } });
  dlq = createKafka(stack.env.KAFKA_BROKERS, 'dlq-reader').consumer({ groupId: `dlq-reader-${Date.now()}` });
  await dlq.connect();
  await dlq.subscribe({ topic: topicNames(stack.env.KAFKA_NAMESPACE).inputsDlq, fromBeginning: true });
  await dlq.run({ eachMessage: async ({ message }) => void deadLetters.push(message) });
});
afterAll(async () => {
  await dlq?.disconnect();
  await stack?.stop();
});

async function produce(messages: { key: string; value: string | Buffer }[]) {
  const producer = createKafka(stack.env.KAFKA_BROKERS, 'another-service').producer();
  await producer.connect();
  await producer.send({ topic: topicNames(stack.env.KAFKA_NAMESPACE).inputs, messages });
  await producer.disconnect();
}

const chat = (conversation: string, id: string, messages: string[], subject = 'billing-service'): ChatInput => ({
  v: 1,
  type: 'chat',
  id,
  conversation,
  subject,
  messages,
  onBusy: 'enqueue',
  sentAt: new Date().toISOString(),
});

const deadLettersOf = (conversation: string, count: number) =>
  vi.waitFor(() => {
    const ours = deadLetters.filter((m) => m.key?.toString() === conversation);
    expect(ours.length).toBeGreaterThanOrEqual(count);
    return ours;
  }, WAIT);

describe('poison never stops a partition', () => {
  it.each([
    ['a NUL character', 'before\u0000after'],
    ['a lone high surrogate', 'before\ud800after'],
    ['a lone low surrogate', '\udc00'],
  ])('a chat or steer whose text holds %s is refused 400 at the edge and nothing is enqueued', async (_what, text) => {
    const conversation = `poison/edge-${Date.now()}`;
    for (const [route, body] of [
      ['chat', { text }],
      ['chat', { messages: ['fine', text] }],
      ['steer', { text }],
    ] as const) {
      const answer = await stack.http.post(conversation, `/${route}`, body);
      expect(answer.status, `${route} ${JSON.stringify(body)}`).toBe(400);
      expect(JSON.stringify(answer.body)).toMatch(/NUL characters \(U\+0000\) or lone surrogates/);
    }
    const after = await stack.http.post(conversation, '/chat', { text: 'after the refused ones', id: 'e-1' });
    expect(after.status).toBe(202);
    expect((await answered(stack.client, conversation, 'e-1')).content).toBe('answer to after the refused ones');
    expect((await stack.client.messages(conversation)).items.map((m) => m.text)).toEqual([
      'after the refused ones',
      'answer to after the refused ones',
    ]);
  });

  it('records produced straight to agent.inputs with a NUL or a lone surrogate are dead-lettered and the partition moves on', async () => {
    const conversation = `poison/direct-${Date.now()}`;
    await produce([
      { key: conversation, value: JSON.stringify(chat(conversation, 'd-1', ['a\u0000b'])) },
      { key: conversation, value: JSON.stringify(chat(conversation, 'd-2', ['a\ud800b'])) },
      { key: conversation, value: JSON.stringify(chat(conversation, 'd-3', ['fine'], 'sub\u0000ject')) },
      { key: conversation, value: JSON.stringify(chat(conversation, 'd-4', ['after the poison'])) },
    ]);
    expect((await answered(stack.client, conversation, 'd-4')).content).toBe('answer to after the poison');
    const dead = await deadLettersOf(conversation, 3);
    expect(dead).toHaveLength(3);
    for (const [message, path] of dead.map((m, n) => [m, ['messages.0', 'messages.0', 'subject'][n]] as const)) {
      expect(message.headers?.reason?.toString()).toContain(`${path}: text must not hold NUL characters`);
    }
    expect(await stack.client.status(conversation)).toMatchObject({ running: null, queue: [], lastInputId: 'd-4' });
  });

  it('a huge record with thousands of schema issues is dead-lettered with a bounded reason', async () => {
    const conversation = `poison/huge-${Date.now()}`;
    const issues = Array.from({ length: 20_000 }, () => 7); // each message of the wrong type: one issue each
    const value = JSON.stringify({ ...chat(conversation, 'h-1', []), messages: issues });
    expect(value.length).toBeGreaterThan(40_000);
    await produce([
      { key: conversation, value },
      { key: conversation, value: JSON.stringify(chat(conversation, 'h-2', ['after the huge one'])) },
    ]);
    expect((await answered(stack.client, conversation, 'h-2')).content).toBe('answer to after the huge one');
    const [dead] = await deadLettersOf(conversation, 1);
    const reason = dead.headers!.reason!.toString();
    expect(reason.length).toBeLessThanOrEqual(2000);
    expect(reason).toMatch(/and 19995 more issues$/);
    expect(dead.value?.toString()).toBe(value);
  });

  it('a record too large to dead-letter whole goes to agent.inputs.dlq without its value, and the partition moves on', async () => {
    const conversation = `poison/too-large-${Date.now()}`;
    // Just under the broker's default message.max.bytes (1048588, a record batch with one
    // record: about 80 bytes beside its key and value); the dead letter's headers tip it over.
    const value = Buffer.alloc(1_048_588 - 120 - Buffer.byteLength(conversation), 'x');
    await produce([{ key: conversation, value }]); // alone: one record batch holds the whole send
    await produce([{ key: conversation, value: JSON.stringify(chat(conversation, 'l-2', ['after the large one'])) }]);
    expect((await answered(stack.client, conversation, 'l-2')).content).toBe('answer to after the large one');
    const [dead] = await deadLettersOf(conversation, 1);
    expect(dead.headers!.reason!.toString()).toMatch(/not JSON/);
    expect(dead.headers!['source-topic']!.toString()).toBe(topicNames(stack.env.KAFKA_NAMESPACE).inputs);
    expect(dead.value).toBeNull();
    expect(dead.headers!.dropped!.toString()).toMatch(new RegExp(`${value.length} bytes of value`));
  });

  it('a model reply holding NUL and lone surrogates is stored with U+FFFD in their place and the turn completes', async () => {
    const conversation = `poison/reply-${Date.now()}`;
    expect((await stack.http.post(conversation, '/chat', { text: 'reply with NUL', id: 'r-1' })).status).toBe(202);
    const turn = await answered(stack.client, conversation, 'r-1');
    expect(turn).toMatchObject({ status: 'completed', content: 'a\ufffdb \ufffd c \ufffd d 😀' });
    expect((await stack.http.post(conversation, '/chat', { text: 'next', id: 'r-2' })).status).toBe(202);
    expect((await answered(stack.client, conversation, 'r-2')).content).toBe('answer to next');
  });

  it('tool calls whose ids and names hold NUL, and repeat, each get their own storable id and result, and the turn answers', async () => {
    const conversation = `poison/tool-${Date.now()}`;
    expect((await stack.http.post(conversation, '/chat', { text: 'call with NUL', id: 't-1' })).status).toBe(202);
    const turn = await answered(stack.client, conversation, 't-1');
    expect(turn).toMatchObject({ status: 'completed', content: 'after the tool: call with NUL' });
    const asked = stack.model.requests.filter((r) => lastUserText(r) === 'call with NUL');
    expect(asked).toHaveLength(2);
    const messages = asked[1].body.messages;
    const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
    const ids = calls.map((c) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => !/[\u0000\ud800-\udfff]/.test(id))).toBe(true);
    const results = messages.flatMap((m) => (m.role === 'tool' ? [{ id: m.tool_call_id, content: m.content }] : []));
    expect(results).toHaveLength(2);
    expect(results).toEqual(
      expect.arrayContaining([
        { id: ids[0], content: 'waited 1 ms' },
        { id: ids[1], content: 'error: there is no tool named "no\ufffdsuch\ufffd"' },
      ]),
    );
  });

  it('records produced straight to agent.events that no reader can fold go to agent.events.dlq unchanged, with reason and source; the conversation goes on', async () => {
    const conversation = `poison/events-${Date.now()}`;
    expect((await stack.http.post(conversation, '/chat', { text: 'before the poison', id: 'v-1' })).status).toBe(202);
    await answered(stack.client, conversation, 'v-1');
    const topics = topicNames(stack.env.KAFKA_NAMESPACE);
    const poison = ['not json {', JSON.stringify({ v: 1, type: 'turn.ended', conversation })];
    const producer = createKafka(stack.env.KAFKA_BROKERS, 'a-stranger').producer();
    await producer.connect();
    const [sent] = await producer.send({ topic: topics.events, acks: -1, messages: poison.map((value) => ({ key: conversation, value })) }).finally(() => producer.disconnect());

    // The companion moved past them: a later chat is answered and its views hold it.
    expect((await stack.http.post(conversation, '/chat', { text: 'after the poison', id: 'v-2' })).status).toBe(202);
    expect((await answered(stack.client, conversation, 'v-2')).content).toBe('answer to after the poison');
    expect(await stack.client.status(conversation)).toMatchObject({ running: null, queue: [], lastInputId: 'v-2' });

    const letters: KafkaMessage[] = [];
    const reader = createKafka(stack.env.KAFKA_BROKERS, 'events-dlq-reader').consumer({ groupId: `events-dlq-reader-${Date.now()}` });
    await reader.connect();
    try {
      await reader.subscribe({ topic: topics.eventsDlq, fromBeginning: true });
      await reader.run({ eachMessage: async ({ message }) => void (message.key?.toString() === conversation && letters.push(message)) });
      await vi.waitFor(() => expect(new Set(letters.map((m) => m.headers?.['source-offset']?.toString())).size).toBeGreaterThanOrEqual(poison.length), WAIT);
    } finally {
      await reader.disconnect();
    }
    for (const [i, value] of poison.entries()) {
      const offset = String(Number(sent.baseOffset) + i);
      const letter = letters.find((m) => m.headers?.['source-offset']?.toString() === offset);
      expect(letter?.value?.toString(), `poison ${i}`).toBe(value);
      expect(letter?.headers?.['source-topic']?.toString()).toBe(topics.events);
      expect(letter?.headers?.['source-partition']?.toString()).toBe(String(sent.partition));
      expect(letter?.headers?.reason?.toString()).toMatch(/not JSON|not a conversation event/);
    }
  });
});
