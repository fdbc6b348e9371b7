import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import type { ConversationEvent } from '@rudder/contracts';
import { createKafka, ensureTopics, readConfig, topicNames, type Config } from '@rudder/runtime';
import { startCompanion, type Companion } from '../start-companion';
import { createFreshDatabase, kafkaBrokers } from '../../../../test/support/companion/test-database';
import { WAIT } from '../../../../test/system';
import { chatWithToolCall, conversationLog } from '../../../../test/support/companion/conversation-log';
import { quietLog } from '../../../../test/support/companion/quiet-log';

const brokers = kafkaBrokers();

describe.skipIf(brokers === undefined)('the companion on agent.events', () => {
  let database: Awaited<ReturnType<typeof createFreshDatabase>>;
  let config: Config;
  let kafka: Kafka;
  let producer: Producer;
  let companion: Companion | undefined;
  const log = quietLog();

  beforeAll(async () => {
    database = await createFreshDatabase();
    config = readConfig({
      KAFKA_BROKERS: brokers,
      KAFKA_NAMESPACE: `companion-${randomBytes(4).toString('hex')}.`,
      KAFKA_PARTITIONS: '3',
      DATABASE_URL: database.url,
      COMPANION_PORT: '0',
    });
    kafka = createKafka(config.KAFKA_BROKERS, 'companion-test');
    await ensureTopics(kafka, topicNames(config.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);
    // Idempotent: a retried send under load must not put a record on the topic twice (the
    // assertions count what was dead-lettered).
    producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
  });

  afterAll(async () => {
    await companion?.stop();
    await producer?.disconnect();
    await database?.drop();
  });

  const topic = () => topicNames(config.KAFKA_NAMESPACE).events;
  const publish = (records: { key: string; value: string }[]) => producer.send({ topic: topic(), messages: records });
  const asRecord = (e: ConversationEvent) => ({ key: e.conversation, value: JSON.stringify(e) });
  const get = async (url: string): Promise<any> => (await fetch(`http://127.0.0.1:${companion!.port}${url}`)).json();

  it('folds what was published before it started, storing unstorable text safely and skipping records that do not parse or that the database refuses', async () => {
    const key = 'user-42/trip';
    const chat = chatWithToolCall(key);
    const poison = conversationLog('poison/one');
    await publish([
      { key, value: 'not json' },
      { key, value: JSON.stringify({ v: 1, type: 'turn.started' }) },
      ...chat.slice(0, 3).map(asRecord),
      asRecord(chat[2]), // the relay published the reply twice
      asRecord(poison.accepted('nul', 'a\u0000b')),
      // A time JavaScript reads but PostgreSQL cannot hold (before 4713 BC).
      asRecord({ ...poison.accepted('too-early', 'a time timestamptz cannot hold'), at: '-010000-01-01T00:00:00.000Z' }),
      asRecord(poison.accepted('fine', 'ok')),
      ...chat.slice(3).map(asRecord),
    ]);

    companion = await startCompanion(config, { log });
    const turn = await vi.waitFor(async () => {
      const view = await get(`/conversations/${encodeURIComponent(key)}/turns/t1`);
      expect(view.status).toBe('completed');
      return view;
    }, WAIT);
    expect(turn.content).toBe('Let me check the weather.\n\nLisbon is sunny: go in May.');
    expect((await get(`/conversations/${encodeURIComponent(key)}/messages`)).items.map((m: { id: string }) => m.id)).toEqual([
      'i1',
      't1/0',
      't1/1',
    ]);
    const poisoned = await vi.waitFor(async () => {
      const status = await get(`/conversations/${encodeURIComponent('poison/one')}`);
      expect(status.queue.length).toBeGreaterThan(1);
      return status;
    }, WAIT);
    expect(poisoned.queue).toEqual([
      { id: 'nul', kind: 'chat', text: 'a\ufffdb', revision: 0 },
      { id: 'fine', kind: 'chat', text: 'ok', revision: 0 },
    ]);
    // Distinct records (partition and offset): a rebalance right after joining the group may fetch
    // the same records again (nothing was committed yet), and each time they are logged again.
    const logged = (prefix: string) => {
      const lines = log.lines.filter((w) => w.startsWith(prefix));
      const fields = lines.map((w) => JSON.parse(w.slice(prefix.length)) as { partition?: number; offset?: string; id?: string });
      const records = new Set(fields.map((f) => f.id ?? `${f.partition}:${f.offset}`));
      return { records: records.size, lines };
    };
    expect(logged('warn dead-lettered a record of agent.events that does not parse')).toMatchObject({ records: 2 });
    expect(logged('error dead-lettered an event the projections cannot hold')).toMatchObject({ records: 1 });
  });

  it('commits offsets only for what it folded, and after a restart folds only what is new', async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const published = await admin.fetchTopicOffsets(topic());
      const end = published.reduce((sum, p) => sum + Number(p.high), 0);
      const committed = async () => {
        const [offsets] = await admin.fetchOffsets({ groupId: `${config.KAFKA_NAMESPACE}companion`, topics: [topic()] });
        return offsets.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
      };
      await vi.waitFor(async () => expect(await committed()).toBe(end), WAIT);

      await companion!.stop();
      const key = 'user-42/trip';
      const later = conversationLog(key);
      const events = chatWithToolCall(key);
      for (let i = 0; i < events.length; i += 1) later.accepted('skip', 'x'); // advance positions past the first turn
      const next = later.accepted('i2', 'And in June?');
      await publish([asRecord(events[5]), asRecord(next)]);
      companion = await startCompanion(config, { log });

      const status = await vi.waitFor(async () => {
        const view = await get(`/conversations/${encodeURIComponent(key)}`);
        expect(view.lastInputId).toBe('i2');
        return view;
      }, WAIT);
      expect(status.queue).toEqual([{ id: 'i2', kind: 'chat', text: 'And in June?', revision: 0 }]);
      expect((await get(`/conversations/${encodeURIComponent(key)}/turns/t1`)).content).toBe(
        'Let me check the weather.\n\nLisbon is sunny: go in May.',
      );
      await vi.waitFor(async () => expect(await committed()).toBe(end + 2), WAIT);
    } finally {
      await admin.disconnect();
    }
  });

  it('dead-letters what it cannot fold to agent.events.dlq, unchanged, with its reason and source; moves on; later events fold', async () => {
    companion ??= await startCompanion(config, { log });
    const key = 'poison/events-dlq';
    const events = conversationLog(key);
    const poison = [
      'not json {',
      JSON.stringify({ v: 1, type: 'turn.started' }),
      // Large and wrong: its reason stays bounded.
      JSON.stringify({ v: 1, type: 'input.accepted', conversation: key, data: Array.from({ length: 20_000 }, (_, i) => i) }),
      // Parses, but PostgreSQL cannot hold its time (before 4713 BC).
      JSON.stringify({ ...events.accepted('too-early', 'a time timestamptz cannot hold'), at: '-010000-01-01T00:00:00.000Z' }),
    ];
    const [first] = await publish([asRecord(events.accepted('e1', 'one'))]);
    const [sent] = await publish(poison.map((value) => ({ key, value })));
    await publish([asRecord(events.accepted('e2', 'two'))]);
    const offsets = poison.map((_, i) => String(Number(sent.baseOffset) + i));
    expect(sent.partition).toBe(first.partition);

    // The companion moved on: what came after the poison is folded.
    const status = await vi.waitFor(async () => {
      const s = await get(`/conversations/${encodeURIComponent(key)}`);
      expect(s.lastInputId).toBe('e2');
      return s;
    }, WAIT);
    expect(status.queue.map((i: { id: string }) => i.id)).toEqual(['e1', 'e2']);

    // Each poison record is on the dead-letter topic, as it was, saying where it came from and why.
    const letters = new Map<string, { key: string | null; value: string | null; headers: Record<string, string> }>();
    const consumer = kafka.consumer({ groupId: `${config.KAFKA_NAMESPACE}dlq-reader` });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: topicNames(config.KAFKA_NAMESPACE).eventsDlq, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]));
          // A redelivery (a rebalance before the commit) may dead-letter a record again: one entry per source offset.
          if (message.key?.toString() === key) letters.set(headers['source-offset'], { key: message.key.toString(), value: message.value?.toString() ?? null, headers });
        },
      });
      await vi.waitFor(() => expect(letters.size).toBeGreaterThanOrEqual(poison.length), WAIT);
    } finally {
      await consumer.disconnect();
    }
    expect([...letters.keys()].sort()).toEqual([...offsets].sort());
    for (const [i, offset] of offsets.entries()) {
      const letter = letters.get(offset)!;
      expect({ key: letter.key, value: letter.value }, `poison ${i}`).toEqual({ key, value: poison[i] });
      expect(letter.headers).toMatchObject({ 'source-topic': topic(), 'source-partition': String(sent.partition), 'source-offset': offset });
      expect(letter.headers.reason.length, `poison ${i}'s reason`).toBeGreaterThan(0);
      expect(letter.headers.reason.length).toBeLessThanOrEqual(2000);
      expect(letter.headers.dropped).toBeUndefined();
    }
    expect(letters.get(offsets[0])!.headers.reason).toMatch(/not JSON/);
    expect(letters.get(offsets[3])!.headers.reason).toMatch(/projections cannot hold/);
  });

  it("a read waiting for its view to reach a position goes on at the fold that reaches it, not at the waiting reads' next poll", async () => {
    await companion?.stop();
    // The waiting reads' shared poll every 10 minutes: only the fold can wake the read within the test.
    companion = await startCompanion(config, { log, readFloorPollMs: 600_000 });
    const steered = conversationLog('floor/woken');
    const accepted = steered.accepted('w1', 'hello');
    const read = fetch(`http://127.0.0.1:${companion.port}/conversations/${encodeURIComponent(accepted.conversation)}`, {
      headers: { 'rudder-min-position': String(accepted.position) },
    });
    // The read has polled once (nothing there) and waits.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await publish([asRecord(accepted)]);
    const response = await read;
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('rudder-position'))).toBeGreaterThanOrEqual(accepted.position);
    expect(((await response.json()) as { lastInputId: string }).lastInputId).toBe('w1');
  });
});
