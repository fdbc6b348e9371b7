import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPool, createKafka, readConfig, topicNames } from '@rudder/runtime';
import { defaultAgent, startTurnWorker } from '@rudder/turn-worker';
import { answered, WAIT, startStack, type Stack } from './stack';
import { testScript } from './scripts';

/**
 * A turn nobody steers costs nothing extra: the same one-tool turn, run by a worker whose
 * turns take steers and by one whose turns take none, makes as many database round trips for
 * its writes and puts as many records on agent.events. (Token records are coalesced by time, so they
 * are not compared.)
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
});
afterAll(() => stack?.stop());

/**
 * A pool that counts the statements its clients send (one round trip each) of the turn's own
 * writes: all but the outbox relay's, which read the outbox and store each conversation's `published_position`. How many sweeps the
 * relay makes depends on timing, not on steering: commits close together share one sweep, and
 * a backstop sweep runs every few seconds.
 */
function countingPool(url: string) {
  const pool = createPool(url);
  let statements = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client);
    client.query = ((...args: Parameters<typeof query>) => {
      const [first] = args as unknown[];
      const text = typeof first === 'string' ? first : String((first as { text?: string } | null)?.text ?? '');
      if (!text.includes('published_position')) statements++;
      return query(...args);
    }) as typeof client.query;
  });
  return { pool, statements: () => statements };
}

/** The position of the conversation's last event, read on a pool of its own (not counted). */
async function lastPosition(conversation: string): Promise<number> {
  const pool = createPool(stack.env.DATABASE_URL);
  try {
    const { rows } = await pool.query<{ n: string }>('SELECT max(position) AS n FROM event_store.events WHERE conversation = $1', [conversation]);
    return Number(rows[0].n);
  } finally {
    await pool.end();
  }
}

/** Events of the conversation still in the outbox, read on a pool of its own (not counted). */
async function unpublished(conversation: string): Promise<number> {
  const pool = createPool(stack.env.DATABASE_URL);
  try {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM event_store.outbox WHERE conversation = $1', [conversation]);
    return rows[0].n;
  } finally {
    await pool.end();
  }
}

/** The types of the conversation's events on agent.events after `position`, once a turn ended there. */
async function eventsOf(conversation: string, position: number) {
  const consumer = createKafka(stack.env.KAFKA_BROKERS, 'cost-reader').consumer({ groupId: `cost-${conversation}` });
  const seen: string[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: topicNames(stack.env.KAFKA_NAMESPACE).events, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => void (message.key?.toString() === conversation && JSON.parse(message.value!.toString()).position > position && seen.push(message.value!.toString())),
  });
  const events = await vi.waitFor(() => {
    expect(seen.some((v) => v.includes('"turn.ended"'))).toBe(true);
    return seen;
  }, WAIT);
  await consumer.disconnect();
  return events.map((v) => JSON.parse(v).type as string);
}

async function oneToolTurn(maxTaken: number) {
  const config = readConfig(stack.env);
  const counted = countingPool(config.DATABASE_URL);
  const worker = await startTurnWorker(config, { agents: [{ ...defaultAgent, steering: { maxTaken } }], pool: counted.pool });
  // Warm up (assignment, recovery sweep) with a turn of its own before counting.
  const warm = `cost/warm-${maxTaken}`;
  await stack.client.chat(warm, { text: 'warm up', id: 'w' });
  await answered(stack.client, warm, 'w');
  // The warm-up's last statement marks its events published: count from after it.
  await vi.waitFor(async () => expect(await unpublished(warm), 'the warm-up published and marked').toBe(0), WAIT);

  // The counted turn is the conversation's second: the worker holds the conversation by then, as
  // it does for every turn after the first while the conversation is in use.
  const conversation = `cost/turn-${maxTaken}`;
  await stack.client.chat(conversation, { text: 'first', id: 'f' });
  await answered(stack.client, conversation, 'f');
  await vi.waitFor(async () => expect(await unpublished(conversation), 'the first turn published and marked').toBe(0), WAIT);
  const first = await lastPosition(conversation);
  const before = counted.statements();
  await stack.client.chat(conversation, { text: 'wait 50', id: 'p' });
  const turn = await answered(stack.client, conversation, 'p');
  const events = await eventsOf(conversation, first);
  const statements = counted.statements() - before;
  await worker.stop();
  await counted.pool.end();
  return { turn, statements, events };
}

describe('the cost of steering', () => {
  it('a one-tool turn nobody steers makes the same database round trips and Kafka records with steering enabled and disabled', async () => {
    const enabled = await oneToolTurn(16);
    const disabled = await oneToolTurn(0);
    expect(enabled.turn.content).toBe(disabled.turn.content);
    expect(enabled.statements).toBeGreaterThan(0);
    expect(enabled.statements).toBe(disabled.statements);
    expect(enabled.events).toEqual(disabled.events);
    expect(enabled.events).toEqual(['input.accepted', 'turn.started', 'input.delivered', 'model.replied', 'tool.started', 'tool.ended', 'model.replied', 'turn.ended']);
    // The ingest: one statement, since the worker holds the conversation as of its last event
    // (its first turn ended): it checks the log did not move, the epoch, and that the chat was
    // not answered before, and writes the chat's acceptance with the turn's start. Its events go
    // to the runner with the position before them, so the runner reads nothing. Then three
    // commits of one statement each (nothing arrived during the turn, so each checks the log did
    // not move and the epoch, and writes, at once): the reply with the tool's start, the tool's
    // result, the last reply with the turn's end.
    expect(enabled.statements).toBe(1 + 3);
  });
});
