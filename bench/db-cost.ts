import { setTimeout as sleep } from 'node:timers/promises';
import { createKafka, createPool, readConfig, topicNames } from '@rudder/runtime';
import { startTurnWorker } from '@rudder/turn-worker';
import { is, turnOf, watchEvents } from './events';
import { startBenchStack, type Infra } from './stack';
import { median } from './stats';

/**
 * Benchmark 3: what one turn costs. An in-process worker on a pool that counts every statement
 * its clients send (as test/steering-cost.e2e.spec.ts does) runs one-tool turns one at a time,
 * unsteered (`wait 50`) and steered (`wait 1000`, a steer sent while the tool runs); a Kafka
 * consumer counts each conversation's records on agent.events and agent.tokens.
 */
export type TurnCost = {
  runs: number;
  /** Median statements per turn, and by kind (BEGIN, COMMIT, SELECT, INSERT, UPDATE, ...). */
  statements: number;
  byKind: Record<string, number>;
  events: number;
  tokens: number;
  eventTypes: string[];
};

export async function dbCost(infra: Infra, options: { runs: number }): Promise<{ unsteered: TurnCost; steered: TurnCost }> {
  const stack = await startBenchStack(infra, { workers: 0 });
  const config = readConfig(stack.env);
  const counted = countingPool(config.DATABASE_URL);
  const worker = await startTurnWorker(config, { pool: counted.pool });
  const records = await recordsByConversation(stack.env.KAFKA_BROKERS, stack.env.KAFKA_NAMESPACE);
  try {
    const turn = async (key: string, steered: boolean) => {
      const watch = await watchEvents(stack.client, key);
      try {
        const before = counted.snapshot();
        await stack.client.chat(key, { text: steered ? 'wait 1000' : 'wait 50', id: 'p' });
        const id = await turnOf(watch, 'p');
        if (steered) {
          await watch.next(is.toolStarted(id));
          await stack.client.steer(key, { text: 'use Celsius', id: 's' });
        }
        await watch.next(is.ended(id));
        await counted.settled(); // the outbox marks its rows after publishing
        return counted.since(before);
      } finally {
        watch.close();
      }
    };
    await turn('cost/warm', false); // the recovery sweep and first statements are not counted
    const measure = async (steered: boolean): Promise<TurnCost> => {
      const counts: Record<string, number>[] = [];
      const keys: string[] = [];
      for (let run = 0; run < options.runs; run++) {
        const key = `cost/${steered ? 'steered' : 'plain'}-${run}`;
        keys.push(key);
        counts.push(await turn(key, steered));
      }
      await sleep(1000); // the consumer catches up
      const kinds = [...new Set(counts.flatMap((c) => Object.keys(c)))].sort();
      const byKind = Object.fromEntries(kinds.map((k) => [k, median(counts.map((c) => c[k] ?? 0))]));
      return {
        runs: options.runs,
        statements: median(counts.map((c) => Object.values(c).reduce((a, b) => a + b, 0))),
        byKind,
        events: median(keys.map((k) => records.events(k).length)),
        tokens: median(keys.map((k) => records.tokens(k))),
        eventTypes: records.events(keys[0]),
      };
    };
    const unsteered = await measure(false);
    const steered = await measure(true);
    return { unsteered, steered };
  } finally {
    await records.stop();
    await worker.stop();
    await counted.pool.end();
    await stack.stop();
  }
}

/** A pool that counts every statement its clients send (one round trip each), by first keyword. */
function countingPool(url: string) {
  const pool = createPool(url);
  const counts: Record<string, number> = {};
  let total = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client);
    client.query = ((...args: Parameters<typeof query>) => {
      const first = args[0] as unknown;
      const text = typeof first === 'string' ? first : ((first as { text?: string })?.text ?? '');
      const kind = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? '?';
      counts[kind] = (counts[kind] ?? 0) + 1;
      total++;
      return query(...args);
    }) as typeof client.query;
  });
  return {
    pool,
    snapshot: () => ({ ...counts }),
    since: (before: Record<string, number>) =>
      Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n - (before[k] ?? 0)]).filter(([, n]) => Number(n) > 0)) as Record<string, number>,
    /** Resolves once no statement was sent for 300 ms. */
    async settled() {
      for (let last = -1; last !== total; ) {
        last = total;
        await sleep(300);
      }
    },
  };
}

/** Every record of agent.events (types) and agent.tokens (a count) per conversation key. */
async function recordsByConversation(brokers: string, namespace: string) {
  const topics = topicNames(namespace);
  const events = new Map<string, string[]>();
  const tokens = new Map<string, number>();
  const consumer = createKafka(brokers, 'bench-cost').consumer({ groupId: `${namespace}bench-cost`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topics.events, topics.tokens], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      const key = message.key?.toString() ?? '';
      if (topic === topics.events) events.set(key, [...(events.get(key) ?? []), JSON.parse(message.value!.toString()).type]);
      else tokens.set(key, (tokens.get(key) ?? 0) + 1);
    },
  });
  return {
    events: (key: string) => events.get(key) ?? [],
    tokens: (key: string) => tokens.get(key) ?? 0,
    stop: () => consumer.disconnect(),
  };
}
