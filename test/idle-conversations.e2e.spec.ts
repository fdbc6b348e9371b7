import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { metricsUrlOf, sample, scrape } from './prometheus';
import { gateName, requestsAbout, testScript } from './scripts';
import { answered, WAIT, startStack, type Stack } from './stack';

/**
 * A worker's memory follows the conversations in use: a conversation idle for
 * WORKER_IDLE_FORGET_MS is let go, and its next input is answered from its log as before;
 * reading it again starts from its latest snapshot (WORKER_SNAPSHOT_EVERY_EVENTS).
 */
let stack: Stack;
let metricsUrl: string;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
  const worker = await stack.startWorker({ METRICS_PORT: '0', WORKER_IDLE_FORGET_MS: '200', WORKER_SNAPSHOT_EVERY_EVENTS: '10' });
  metricsUrl = metricsUrlOf(worker);
});
afterAll(() => stack?.stop());

const held = async () => sample(await scrape(metricsUrl), 'rudder_conversations_held');

describe('idle conversations', () => {
  it('an idle conversation is let go, and its next turn still sees every earlier one', async () => {
    const { client, http, model } = stack;
    const conversation = `idle/${Math.random().toString(36).slice(2, 8)}`;
    // Held while its turn runs (the reply waits at a gate), let go once idle.
    const gate = gateName('idle');
    const first = `first gate:${gate}`;
    expect((await http.post(conversation, '/chat', { text: first, id: 'i-1' })).status).toBe(202);
    await model.gate(gate).reached();
    expect(await held()).toBe(1);
    model.gate(gate).open();
    await answered(client, conversation, 'i-1');
    await vi.waitFor(async () => expect(await held()).toBe(0), WAIT);

    expect((await http.post(conversation, '/chat', { text: 'second', id: 'i-2' })).status).toBe(202);
    await answered(client, conversation, 'i-2');
    const [second] = requestsAbout(model.requests, 'second');
    expect(second.body.messages.slice(1)).toEqual([
      { role: 'user', content: first },
      { role: 'assistant', content: `answer to ${first}` },
      { role: 'user', content: 'second' },
    ]);
    await vi.waitFor(async () => expect(await held()).toBe(0), WAIT);
  });

  it('a snapshot of the fold is stored between turns; read again, the conversation starts from it, and the next turn still sees every earlier one', async () => {
    const conversation = `snapshot/${Math.random().toString(36).slice(2, 8)}`;
    await chats(conversation, ['one', 'two', 'three']);
    // Ten events and more since none: a snapshot, between turns, at a position of the log.
    const snapshot = await snapshotOf<{ position: string; last: string }>(
      conversation,
      's.position, (SELECT max(position) FROM event_store.events WHERE conversation = $1) AS last',
    );
    expect(Number(snapshot.position)).toBeGreaterThanOrEqual(10);
    expect(Number(snapshot.position)).toBeLessThanOrEqual(Number(snapshot.last));

    // What the snapshot says is what the worker starts from: an edit the log does not hold shows
    // in the next request (a test's doing; the worker itself only ever stores folds of the log).
    await vi.waitFor(async () => expect(await held()).toBe(0), WAIT);
    await query(`UPDATE event_store.snapshots SET fold = jsonb_set(fold, '{history,0,messages,0,content}', '"one, as the snapshot has it"') WHERE conversation = $1`, [conversation]);
    expect(await requestAfter(conversation, 'four')).toEqual([
      { role: 'user', content: 'one, as the snapshot has it' },
      { role: 'assistant', content: 'answer to one' },
      ...turnsOf(['two', 'three']),
      { role: 'user', content: 'four' },
    ]);
  });

  it("a snapshot folded keeping fewer earlier turns than this worker's agents need is read past: the next turn still carries them all", async () => {
    const conversation = `snapshot-kept/${Math.random().toString(36).slice(2, 8)}`;
    await chats(conversation, ['uno', 'dos', 'tres']);
    // The worker's fold keeps what its agents' largest window needs (HISTORY_TURNS, 100 here).
    const stored = await snapshotOf<{ kept: number; turns: number }>(conversation, "(s.fold->>'historyKept')::int AS kept, jsonb_array_length(s.fold->'history') AS turns");
    expect(stored.kept).toBe(100);
    expect(stored.turns).toBeGreaterThanOrEqual(2);

    // As a worker whose agents carry one earlier turn would have stored it: the last turn only.
    await vi.waitFor(async () => expect(await held()).toBe(0), WAIT);
    await query(
      `UPDATE event_store.snapshots SET fold = jsonb_set(jsonb_set(fold, '{historyKept}', '1'), '{history}', jsonb_build_array(fold->'history'->-1)) WHERE conversation = $1`,
      [conversation],
    );
    expect(await requestAfter(conversation, 'cuatro')).toEqual([...turnsOf(['uno', 'dos', 'tres']), { role: 'user', content: 'cuatro' }]);
  });
});

/** Sends each text as a chat (its id the text itself) and waits for its answer, one after the other. */
async function chats(conversation: string, texts: string[]): Promise<void> {
  for (const text of texts) {
    expect((await stack.http.post(conversation, '/chat', { text, id: text })).status).toBe(202);
    await answered(stack.client, conversation, text);
  }
}

/** Sends `text` as a chat and answers the messages its model request carried after the system prompt. */
async function requestAfter(conversation: string, text: string): Promise<unknown[]> {
  await chats(conversation, [text]);
  const [request] = requestsAbout(stack.model.requests, text);
  return request.body.messages.slice(1);
}

/** Earlier turns as a model request carries them: each text, then the scripted model's answer to it. */
const turnsOf = (texts: string[]) => texts.flatMap((text) => [{ role: 'user', content: text }, { role: 'assistant', content: `answer to ${text}` }]);

/** `columns` of the conversation's snapshot (`s`, `$1` the conversation), once one is stored. */
function snapshotOf<R extends pg.QueryResultRow>(conversation: string, columns: string): Promise<R> {
  return vi.waitFor(async () => {
    const rows = await query<R>(`SELECT ${columns} FROM event_store.snapshots s WHERE s.conversation = $1`, [conversation]);
    expect(rows).toHaveLength(1);
    return rows[0];
  }, WAIT);
}

async function query<R extends pg.QueryResultRow>(sql: string, values: unknown[]): Promise<R[]> {
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  try {
    return (await db.query<R>(sql, values)).rows;
  } finally {
    await db.end();
  }
}
