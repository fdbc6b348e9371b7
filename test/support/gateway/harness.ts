import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import {
  eventVersion,
  InputRecord,
  inputDigest,
  inputText,
  type ChatInput,
  type ConversationEvent,
  type EventDataOf,
  type EventType,
  type TokenRecord,
} from '@rudder/contracts';
import { createKafka, ensureTopics, readConfig, topicNames, type TopicNames } from '@rudder/runtime';
import type { Consumer, Kafka, Producer } from 'kafkajs';
import { inject } from 'vitest';
import { startGateway, type GatewayOptions, type RunningGateway } from '@rudder/gateway';
import { startCompanionStub, type CompanionStub } from './companion-stub';

/** A record read back from `agent.inputs`, with the key it was produced under. */
export type ProducedInput = { key: string | null; value: InputRecord };

export type Harness = {
  gateway: RunningGateway;
  companion: CompanionStub;
  topics: TopicNames;
  /** Every record on this harness's `agent.inputs`, in order (one partition, so in total order). */
  inputs: ProducedInput[];
  /** Waits until a record with this input id is on `agent.inputs`; everything produced before it is then in `inputs`. */
  inputArrived(id: string, timeoutMs?: number): Promise<ProducedInput>;
  /** Waits until a record of this type is on `agent.inputs` for this conversation, and returns the first. */
  inputOf<T extends InputRecord['type']>(key: string, type: T, timeoutMs?: number): Promise<Extract<InputRecord, { type: T }>>;
  /** Waits until a record on `agent.inputs` matches, and returns the first that does (`what` names it if none comes). */
  inputWhere(matches: (record: ProducedInput) => boolean, what: string, timeoutMs?: number): Promise<ProducedInput>;
  /**
   * The records the gateway produces to `agent.inputs` while `block` runs, and nothing else:
   * a marker record produced by the test before and after it (one partition: total order)
   * fences off whatever came earlier or is still in flight.
   */
  producedDuring(block: () => Promise<void>): Promise<ProducedInput[]>;
  /**
   * Plays the worker's part while set: called for every input the gateway produces (the
   * harness's own fences excepted); the events it returns are published on agent.events.
   * Unset (the default), the test publishes decisions itself.
   */
  worker: ((input: InputRecord) => ConversationEvent[] | undefined) | undefined;
  /** Publishes events and tokens as the worker's outbox relay would. */
  publishEvents(events: ConversationEvent[]): Promise<void>;
  publishTokens(tokens: TokenRecord[]): Promise<void>;
  /** `fetch` against the gateway, with the path appended and a JSON body when given an object. */
  call(path: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<Answer>;
  stop(): Promise<void>;
};

export type Answer = { status: number; headers: Headers; body: any };

/**
 * One gateway on the run's real Kafka and PostgreSQL (the global setup's), with topics of its
 * own (a fresh namespace, ONE partition, so "nothing else was produced" can be proved by
 * reading up to a later record) and a companion stub. `options` go to `startGateway`.
 */
export async function startHarness(env: Record<string, string> = {}, options: GatewayOptions = {}): Promise<Harness> {
  const brokers = inject('kafkaBrokers');
  const namespace = `gw${randomBytes(4).toString('hex')}.`;
  const topics = topicNames(namespace);
  const kafka = createKafka(brokers, 'gateway-test');
  await ensureTopics(kafka, topics, 1);
  const companion = await startCompanionStub();
  const inputs: ProducedInput[] = [];
  const producer = kafka.producer();
  await producer.connect();
  let harness: Harness | undefined;
  const reader = await readAll(kafka, topics.inputs, `${namespace}test-reader`, async (record) => {
    inputs.push(record);
    if (record.value.conversation === FENCE) return;
    const events = harness?.worker?.(record.value);
    if (events?.length) await produce(producer, topics.events, events);
  });
  const gateway = await startGateway(
    readConfig({
      KAFKA_BROKERS: brokers,
      DATABASE_URL: inject('databaseUrl'),
      KAFKA_NAMESPACE: namespace,
      GATEWAY_PORT: '0',
      COMPANION_URL: companion.url,
      ...env,
    }),
    options,
  );

  const started: Harness = {
    gateway,
    companion,
    topics,
    inputs,
    worker: undefined,
    inputArrived: (id, timeoutMs) => started.inputWhere((record) => record.value.id === id, `input ${id}`, timeoutMs),
    async inputOf(key, type, timeoutMs) {
      const found = await started.inputWhere((record) => record.key === key && record.value.type === type, `a ${type} of ${key}`, timeoutMs);
      return found.value as Extract<InputRecord, { type: typeof type }>;
    },
    async inputWhere(matches, what, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = inputs.find(matches);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`${what} did not arrive on ${topics.inputs}`);
        await sleep(25);
      }
    },
    async producedDuring(block) {
      const fence = async () => {
        const id = `fence-${randomBytes(6).toString('hex')}`;
        const marker: ChatInput = {
          v: 1,
          type: 'chat',
          id,
          conversation: FENCE,
          subject: 'test',
          messages: ['fence'],
          onBusy: 'enqueue',
          sentAt: new Date().toISOString(),
        };
        await producer.send({ topic: topics.inputs, acks: -1, messages: [{ key: FENCE, value: JSON.stringify(marker) }] });
        await started.inputArrived(id);
        return inputs.findIndex((record) => record.value.id === id);
      };
      const from = await fence();
      await block();
      const to = await fence();
      return inputs.slice(from + 1, to);
    },
    async publishEvents(events) {
      await produce(producer, topics.events, events);
    },
    async publishTokens(tokens) {
      await produce(producer, topics.tokens, tokens);
    },
    async call(path, init = {}) {
      const body = init.body === undefined || typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
      const response = await fetch(gateway.url + path, {
        method: init.method ?? (body === undefined ? 'GET' : 'POST'),
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
        body,
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: the test sees the text
      }
      return { status: response.status, headers: response.headers, body: parsed };
    },
    async stop() {
      await gateway.stop();
      await reader.disconnect();
      await producer.disconnect();
      await companion.stop();
    },
  };
  harness = started;
  return started;
}

/** The conversation of the harness's fence records. */
const FENCE = 'fence';

async function readAll(kafka: Kafka, topic: string, groupId: string, take: (record: ProducedInput) => Promise<void>): Promise<Consumer> {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      // Strict: a record the gateway produced that is not a valid input fails the test that waits for it.
      await take({ key: message.key?.toString() ?? null, value: InputRecord.parse(JSON.parse(message.value!.toString())) });
    },
  });
  return consumer;
}

async function produce(producer: Producer, topic: string, records: (ConversationEvent | TokenRecord)[]): Promise<void> {
  await producer.send({
    topic,
    messages: records.map((record) => ({ key: record.conversation, value: JSON.stringify(record) })),
  });
}

let nextPosition = 1_000_000;

/** Builds an event as it is published on agent.events; positions increase across the run. */
export function conversationEvent<T extends EventType>(conversation: string, type: T, data: EventDataOf<T>, position = nextPosition++): ConversationEvent {
  return { v: eventVersion(type), id: `e-${conversation}-${position}`, conversation, position, at: new Date().toISOString(), type, data } as ConversationEvent;
}

/** The worker took a chat or a steer into the log (`input.accepted`). */
export function inputAccepted(conversation: string, input: { id: string; kind?: 'chat' | 'steer'; messages: string[]; subject?: string }, ahead?: number): ConversationEvent {
  const { id, kind = 'chat', messages, subject = 'anonymous' } = input;
  return conversationEvent(conversation, 'input.accepted', {
    input: { id, kind, text: inputText(messages), messages, subject, sentAt: new Date().toISOString() },
    ...(ahead === undefined ? {} : { ahead }),
  });
}

/** The worker refused a chat or a steer (`input.rejected`). */
export function inputRejected(
  conversation: string,
  input: { id: string; kind?: 'chat' | 'steer'; text: string },
  code: 'queue_full' | 'precondition_failed' | 'busy',
  message: string,
): ConversationEvent {
  const { text, ...named } = input;
  return conversationEvent(conversation, 'input.rejected', { input: { kind: 'chat', ...named, digest: inputDigest(text) }, code, message });
}

/** A worker that accepts every chat and steer it gets (a steer as a turn of its own), and decides nothing else. */
export function acceptEverything(input: InputRecord): ConversationEvent[] | undefined {
  if (input.type === 'chat') return [inputAccepted(input.conversation, { id: input.id, messages: input.messages, subject: input.subject })];
  if (input.type === 'steer') {
    return [
      inputAccepted(input.conversation, { id: input.id, kind: 'steer', messages: [input.text], subject: input.subject }),
      steerAccepted(input.conversation, nextPosition++, { id: input.id, text: input.text, turn: null, landed: false }),
    ];
  }
  return undefined;
}

/** Builds the worker's decision on a steer, `steer.accepted`, as it is published on agent.events. */
export function steerAccepted(
  conversation: string,
  position: number,
  decision: { id: string; text: string; turn: string | null; landed: boolean },
): ConversationEvent {
  return {
    v: 1,
    id: `e-${conversation}-${position}`,
    conversation,
    position,
    at: new Date().toISOString(),
    type: 'steer.accepted',
    data: { input: { id: decision.id, text: decision.text }, turn: decision.turn, landed: decision.landed },
  };
}

/** Builds a `ConversationEvent` of type `turn.started` (enough for stream tests). */
export function turnStarted(conversation: string, position: number, turn = 't-1'): ConversationEvent {
  return {
    v: 1,
    id: `e-${conversation}-${position}`,
    conversation,
    position,
    at: new Date(0).toISOString(),
    type: 'turn.started',
    data: { turn, prompt: { id: `in-${position}`, text: `prompt ${position}` } },
  };
}
