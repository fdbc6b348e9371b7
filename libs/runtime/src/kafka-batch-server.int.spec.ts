import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { quietLog } from '../../../test/support/companion/quiet-log';
import { ASSIGNED, KafkaBatchServer, type KafkaBatchServerOptions, type PartitionBatch, type PartitionsAssigned } from './kafka-batch-server';
import { createKafka } from './kafka';

/**
 * The transport's promises (see its doc), on the run's Kafka: each handler call is a slice of one
 * partition's fetched batch, in offset order, a partition's slices one after another; the
 * assignment handler runs before any batch; a slice's offsets are committed only once its
 * handler resolved; a handler that throws commits nothing and gets the slice again; with
 * `commitEveryMs`, close() commits what was handled. Each test has a topic and a group of its own.
 */
const WAIT = { timeout: 30_000, interval: 100 };
const TOPIC = 'records';

type Setup = { kafka: Kafka; admin: Admin; producer: Producer; namespace: string; topic: string; group: string };
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function setUp(partitions: number): Promise<Setup> {
  const kafka = createKafka(inject('kafkaBrokers'), 'batch-server-spec', quietLog());
  const namespace = `batch-server-${randomUUID().slice(0, 8)}.`;
  const topic = namespace + TOPIC;
  const admin = kafka.admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  cleanups.push(() => producer.disconnect());
  return { kafka, admin, producer, namespace, topic, group: `${namespace}group` };
}

/** `count` records on `partition`, valued `p<partition>-<n>`. */
const produce = (s: Setup, partition: number, count: number, from = 0) =>
  s.producer.send({ topic: s.topic, messages: Array.from({ length: count }, (_, i) => ({ partition, value: `p${partition}-${from + i}` })) });

/** The group's committed offset of each partition (-1: none). */
async function committed(s: Setup): Promise<Record<number, number>> {
  const [offsets] = await s.admin.fetchOffsets({ groupId: s.group, topics: [s.topic] });
  return Object.fromEntries(offsets.partitions.map((p) => [p.partition, Number(p.offset)]));
}

async function listening(
  s: Setup,
  handle: (batch: PartitionBatch) => Promise<void>,
  options: Partial<KafkaBatchServerOptions> = {},
  assigned?: (assignment: PartitionsAssigned) => Promise<void> | void,
): Promise<KafkaBatchServer> {
  const server = new KafkaBatchServer({
    kafka: s.kafka,
    topics: [TOPIC],
    namespace: s.namespace,
    consumer: { groupId: s.group, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 200, retry: { initialRetryTime: 100, retries: 20 } },
    log: quietLog(),
    ...options,
  });
  // What Nest does with each @EventPattern handler of the application.
  server.addHandler(TOPIC, handle, true);
  if (assigned) server.addHandler(ASSIGNED, async (assignment: PartitionsAssigned) => assigned(assignment), true);
  await new Promise<void>((resolve, reject) => void server.listen((error) => (error ? reject(error as Error) : resolve())));
  cleanups.push(() => server.close());
  return server;
}

const values = (batch: PartitionBatch) => batch.messages.map((m) => m.value!.toString());

describe('KafkaBatchServer', () => {
  it("hands each partition's records over in slices of at most maxBatchSize, in offset order, one slice of a partition at a time, after the assignment handler ran", async () => {
    const s = await setUp(2);
    await produce(s, 0, 7);
    await produce(s, 1, 5);
    const seen: string[] = [];
    const calls: { partition: number; values: string[]; lag: number }[] = [];
    const inFlight = new Map<number, number>();
    let overlapping = 0;
    await listening(
      s,
      async (batch) => {
        seen.push(`batch ${batch.partition}`);
        inFlight.set(batch.partition, (inFlight.get(batch.partition) ?? 0) + 1);
        if (inFlight.get(batch.partition)! > 1) overlapping++;
        calls.push({ partition: batch.partition, values: values(batch), lag: batch.lag });
        // Stay a while, so that a second slice of the partition handed over meanwhile would overlap this one.
        await new Promise((resolve) => setTimeout(resolve, 20));
        inFlight.set(batch.partition, inFlight.get(batch.partition)! - 1);
      },
      { maxBatchSize: 3, partitionsAtOnce: 2 },
      (assignment) => void seen.push(`assigned ${assignment.topic} ${[...assignment.partitions].sort().join(',')}`),
    );
    await vi.waitFor(() => expect(calls.flatMap((c) => c.values)).toHaveLength(12), WAIT);

    expect(seen[0]).toBe(`assigned ${TOPIC} 0,1`);
    expect(overlapping).toBe(0);
    for (const call of calls) {
      expect(call.values.length).toBeLessThanOrEqual(3);
      expect(call.values.every((v) => v.startsWith(`p${call.partition}-`))).toBe(true);
    }
    const of = (partition: number) => calls.filter((c) => c.partition === partition);
    expect(of(0).flatMap((c) => c.values)).toEqual(Array.from({ length: 7 }, (_, i) => `p0-${i}`));
    expect(of(1).flatMap((c) => c.values)).toEqual(Array.from({ length: 5 }, (_, i) => `p1-${i}`));
    // The lag after each partition's last slice: nothing left of it.
    expect([of(0).at(-1)!.lag, of(1).at(-1)!.lag]).toEqual([0, 0]);
    await vi.waitFor(async () => expect(await committed(s)).toEqual({ 0: 7, 1: 5 }), WAIT);
  });

  it("commits a slice's offsets only once its handler resolved: while it runs, the group's offset is where the slice begins", async () => {
    const s = await setUp(1);
    await produce(s, 0, 6);
    const atStart: number[] = [];
    const slices: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await listening(
      s,
      async (batch) => {
        atStart.push((await committed(s))[0]);
        slices.push(values(batch));
        // The second slice waits until the test lets it go.
        if (slices.length === 2) await held;
      },
      { maxBatchSize: 2 },
    );
    await vi.waitFor(() => expect(slices).toHaveLength(2), WAIT);
    // Held in its handler, the second slice (offsets 2-3) is not committed, however long it takes.
    expect(await committed(s)).toEqual({ 0: 2 });
    release();
    await vi.waitFor(() => expect(slices).toHaveLength(3), WAIT);
    // Each slice found every earlier slice committed, and none of its own records.
    expect(atStart).toEqual([-1, 2, 4]);
    expect(slices).toEqual([['p0-0', 'p0-1'], ['p0-2', 'p0-3'], ['p0-4', 'p0-5']]);
    await vi.waitFor(async () => expect(await committed(s)).toEqual({ 0: 6 }), WAIT);
  });

  it('a handler that throws commits nothing of its slice: the slice comes again, whole and in order, and nothing after it is handed over first', async () => {
    const s = await setUp(1);
    await produce(s, 0, 4);
    const slices: string[][] = [];
    const atStart: number[] = [];
    let failures = 0;
    await listening(
      s,
      async (batch) => {
        atStart.push((await committed(s))[0]);
        slices.push(values(batch));
        if (values(batch)[0] === 'p0-2' && failures < 2) {
          failures++;
          throw new Error('the store is down');
        }
      },
      { maxBatchSize: 2 },
    );
    await vi.waitFor(() => expect(slices).toHaveLength(4), WAIT);
    expect(slices).toEqual([['p0-0', 'p0-1'], ['p0-2', 'p0-3'], ['p0-2', 'p0-3'], ['p0-2', 'p0-3']]);
    // Every try of the failing slice found the offsets where it begins.
    expect(atStart).toEqual([-1, 2, 2, 2]);
    await vi.waitFor(async () => expect(await committed(s)).toEqual({ 0: 4 }), WAIT);
    // And the partition goes on past it.
    await produce(s, 0, 1, 4);
    await vi.waitFor(() => expect(slices.at(-1)).toEqual(['p0-4']), WAIT);
  });

  it('with commitEveryMs it commits later, but only what was handled, and close() commits everything handled before it stops', async () => {
    const s = await setUp(1);
    await produce(s, 0, 5);
    const handled: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const server = await listening(
      s,
      async (batch) => {
        // The last record's slice stays in its handler until the test lets it go.
        if (values(batch).includes('p0-4')) await held;
        handled.push(...values(batch));
      },
      { maxBatchSize: 2, commitEveryMs: 60_000 },
    );
    await vi.waitFor(() => expect(handled).toHaveLength(4), WAIT);
    // Handled, but not a minute ago: nothing committed yet.
    expect(await committed(s)).toEqual({ 0: -1 });
    const closed = server.close();
    release();
    await closed;
    expect(handled).toEqual(['p0-0', 'p0-1', 'p0-2', 'p0-3', 'p0-4']);
    expect(await committed(s)).toEqual({ 0: 5 });
  });
});
