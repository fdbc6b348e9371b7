import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { createPool, type Pool } from '@rudder/runtime';
import { appendToConversation } from './append-to-conversation';
import { appendToConversations } from './append-to-conversations';
import { groupedWrites, WRITES_PER_STATEMENT } from './grouped-writes';
import { AlreadyStoredError, type StreamRules } from './writes';
import { FencedError, takePartitions } from './fencing';
import { readConversation } from './read';
import { useEventStoreDatabase } from './testing';

/**
 * The two ways of appendToConversation: one statement when the writer holds the conversation as
 * of its last event, a transaction otherwise — and the statement never writes on a state that is
 * no longer the stored one, however the writes interleave.
 */
const db = useEventStoreDatabase();

/** The state is how many events the conversation holds; each event says which count it was decided on. */
const countingRules: StreamRules<number> = {
  parse: (stored) => (typeof stored === 'number' ? stored : 0),
  evolve: (count) => count + 1,
  onceKey: (event) => `${event.type}:${JSON.stringify(event.data)}`,
  hasOpenWork: () => false,
};
const decidedOn = (count: number, label: string): DomainEvent[] => [
  { type: 'model.replied', data: { turn: label, step: count, content: label, toolCalls: [] } } as DomainEvent,
];
const stepsOf = async (conversation: string) => (await readConversation(db.pool(), conversation)).map((e) => (e.data as { step: number }).step);

/** The pool, counting the statements sent on it and the transactions' connections taken from it. */
function counted(pool: Pool) {
  const counts = { statements: 0, connections: 0 };
  const wrapped = new Proxy(pool, {
    get(target, property, receiver) {
      if (property === 'query') return (...args: Parameters<Pool['query']>) => (counts.statements++, target.query(...args));
      if (property === 'connect') return () => (counts.connections++, target.connect());
      return Reflect.get(target, property, receiver);
    },
  });
  return { pool: wrapped, counts };
}

async function conversationAt(partition: number, conversation: string) {
  const epochs = await takePartitions(db.pool(), [partition], 'append-test');
  const { stored } = await appendToConversations(db.pool(), countingRules, partition, epochs, [{ conversation, probe: [] }], (_c, count) => decidedOn(count, 'first'));
  return { epochs, last: stored[0].position };
}

describe('appendToConversation', () => {
  it('holding the state as of the last event, it writes in one statement and no transaction', async () => {
    const { epochs, last } = await conversationAt(0, 'one-statement');
    const { pool, counts } = counted(db.pool());
    const { stored, earlier } = await appendToConversation(pool, countingRules, 'one-statement', epochs, (count) => decidedOn(count, 'second'), { position: last, state: 1 });
    expect(counts).toEqual({ statements: 1, connections: 0 });
    expect(earlier).toEqual([]);
    expect(stored.map((e) => e.position)).toEqual([expect.any(Number)]);
    expect(await stepsOf('one-statement')).toEqual([0, 1]);
    // The row's last position moved with it: the next write holding it is one statement again.
    await appendToConversation(pool, countingRules, 'one-statement', epochs, (count) => decidedOn(count, 'third'), { position: stored[0].position, state: 2 });
    expect(counts).toEqual({ statements: 2, connections: 0 });
    expect(await stepsOf('one-statement')).toEqual([0, 1, 2]);
  });

  it('when the log moved since what the writer holds, nothing is written on that state: it decides again on the stored one and gets the events it missed', async () => {
    const { epochs, last } = await conversationAt(1, 'moved');
    // Another writer (an ingest) appends after what our writer holds.
    const other = await appendToConversation(db.pool(), countingRules, 'moved', epochs, (count) => decidedOn(count, 'other'));
    const { pool, counts } = counted(db.pool());
    const { stored, earlier } = await appendToConversation(pool, countingRules, 'moved', epochs, (count) => decidedOn(count, 'ours'), { position: last, state: 1 });
    expect(counts.connections).toBe(1);
    expect(earlier).toEqual(other.stored);
    expect(await stepsOf('moved')).toEqual([0, 1, 2]);
    expect(stored.map((e) => (e.data as { step: number }).step)).toEqual([2]);
  });

  it('a statement that waited for the row lock while another write committed sees the row as it is now, and writes nothing on the old state', async () => {
    const { epochs, last } = await conversationAt(2, 'raced');
    // Another write holds the conversation's lock and appends, as a transaction does, then commits once ours waits.
    const other = await db.pool().connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM event_store.conversations WHERE key = 'raced' FOR UPDATE`);
      const { rows } = await other.query<{ position: string }>(
        `INSERT INTO event_store.events (id, conversation, type, data, once_key) VALUES (gen_random_uuid(), 'raced', 'model.replied', '{"turn":"other","step":1,"content":"other","toolCalls":[]}', 'other') RETURNING position`,
      );
      await other.query(`UPDATE event_store.conversations SET head = '2', last_position = $1 WHERE key = 'raced'`, [rows[0].position]);
      const ours = appendToConversation(db.pool(), countingRules, 'raced', epochs, (count) => decidedOn(count, 'ours'), { position: last, state: 1 });
      await expect.poll(waitingForLocks).toBeGreaterThan(0);
      await other.query('COMMIT');
      const { stored, earlier } = await ours;
      expect(earlier.map((e) => e.position)).toEqual([Number(rows[0].position)]);
      expect(stored.map((e) => (e.data as { step: number }).step)).toEqual([2]);
      expect(await stepsOf('raced')).toEqual([0, 1, 2]);
    } finally {
      other.release();
    }
  });

  it('a writer whose epoch is gone writes nothing, on either way, and is told it is fenced', async () => {
    const { epochs, last } = await conversationAt(3, 'fenced');
    await takePartitions(db.pool(), [3], 'successor');
    await expect(appendToConversation(db.pool(), countingRules, 'fenced', epochs, (count) => decidedOn(count, 'zombie'), { position: last, state: 1 })).rejects.toBeInstanceOf(FencedError);
    expect(await stepsOf('fenced')).toEqual([0]);
  });
});

async function waitingForLocks(): Promise<number> {
  const { rows } = await db.pool().query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`);
  return rows[0].n;
}

/**
 * appendToConversations (an ingested batch) given what the writer holds of each conversation:
 * one statement when every one is held as of its last event, on the batch's partition, and
 * none of the batch's inputs was handled before; the transaction, deciding on what is stored,
 * in every other case.
 */
describe('appendToConversations, holding the conversations', () => {
  const heldAt = (positions: Record<string, number>) => (conversation: string) =>
    conversation in positions ? { position: positions[conversation], state: 1 } : undefined;

  it('holding every conversation of the batch as of its last event, it writes them all in one statement and no transaction', async () => {
    const a = await conversationAt(6, 'held-a');
    const b = await appendToConversations(db.pool(), countingRules, 6, a.epochs, [{ conversation: 'held-b', probe: [] }], (_c, count) => decidedOn(count, 'first'));
    const { pool, counts } = counted(db.pool());
    const seen: string[] = [];
    const { stored, before, elsewhere } = await appendToConversations(
      pool, countingRules, 6, a.epochs,
      [{ conversation: 'held-b', probe: ['never-stored'] }, { conversation: 'held-a', probe: [] }],
      (conversation, count, alreadyStored) => (seen.push(`${conversation} ${count} ${alreadyStored.size}`), decidedOn(count, `${conversation}-second`)),
      heldAt({ 'held-a': a.last, 'held-b': b.stored[0].position }),
    );
    expect(counts).toEqual({ statements: 1, connections: 0 });
    expect(seen).toEqual(['held-a 1 0', 'held-b 1 0']);
    expect(elsewhere).toEqual(new Map());
    expect(before).toEqual(new Map([['held-a', a.last], ['held-b', b.stored[0].position]]));
    expect(stored.map((e) => e.conversation).sort()).toEqual(['held-a', 'held-b']);
    expect(await stepsOf('held-a')).toEqual([0, 1]);
    expect(await stepsOf('held-b')).toEqual([0, 1]);
    // Each row's last position moved with its events: the next batch holding them is one statement again.
    const positions = Object.fromEntries(stored.map((e) => [e.conversation, e.position]));
    await appendToConversations(pool, countingRules, 6, a.epochs, [{ conversation: 'held-a', probe: [] }], (_c, count) => decidedOn(count, 'third'), (c) => ({ position: positions[c], state: 2 }));
    expect(counts).toEqual({ statements: 2, connections: 0 });
    expect(await stepsOf('held-a')).toEqual([0, 1, 2]);
  });

  it('when one of them moved since, nothing is written on what it held: the transaction decides every one on the stored state', async () => {
    const a = await conversationAt(7, 'moved-a');
    const b = await appendToConversations(db.pool(), countingRules, 7, a.epochs, [{ conversation: 'moved-b', probe: [] }], (_c, count) => decidedOn(count, 'first'));
    await appendToConversation(db.pool(), countingRules, 'moved-b', a.epochs, (count) => decidedOn(count, 'other'));
    const { pool, counts } = counted(db.pool());
    const { stored, before } = await appendToConversations(
      pool, countingRules, 7, a.epochs,
      [{ conversation: 'moved-a', probe: [] }, { conversation: 'moved-b', probe: [] }],
      (conversation, count) => decidedOn(count, `${conversation}-ours`),
      heldAt({ 'moved-a': a.last, 'moved-b': b.stored[0].position }),
    );
    expect(counts.connections).toBe(1);
    expect(await stepsOf('moved-a')).toEqual([0, 1]);
    expect(await stepsOf('moved-b')).toEqual([0, 1, 2]);
    expect(stored.map((e) => `${e.conversation} ${(e.data as { step: number }).step}`).sort()).toEqual(['moved-a 1', 'moved-b 2']);
    expect(before.get('moved-b')).toBeGreaterThan(b.stored[0].position);
  });

  it('an input handled before (one of its probe keys stored) is never decided as new on what the writer holds: the transaction sees it stored', async () => {
    const { epochs } = await conversationAt(8, 'handled');
    // The input's first answer (say its refusal), under a once key other than the one a new decision would use.
    const refusal = { type: 'model.replied', data: { turn: 'refused', step: 9, content: 'refused', toolCalls: [] } } as DomainEvent;
    const first = await appendToConversation(db.pool(), countingRules, 'handled', epochs, () => [refusal]);
    const answered = countingRules.onceKey(refusal);
    const { pool, counts } = counted(db.pool());
    const { stored } = await appendToConversations(
      pool, countingRules, 8, epochs,
      [{ conversation: 'handled', probe: ['accepted-key', answered] }],
      (_c, count, alreadyStored) => (alreadyStored.has(answered) ? [] : decidedOn(count, 'accepted')),
      heldAt({ handled: first.stored[0].position }),
    );
    expect(counts.connections).toBe(1);
    expect(stored).toEqual([]);
    expect(await stepsOf('handled')).toEqual([0, 9]);
  });

  it('a held conversation stored on another partition is not written by this partition\'s batch: it is returned as elsewhere', async () => {
    const there = await conversationAt(9, 'lives-on-9');
    const epochs = new Map([...there.epochs, ...(await takePartitions(db.pool(), [10], 'append-test'))]);
    const { stored, elsewhere } = await appendToConversations(
      db.pool(), countingRules, 10, epochs,
      [{ conversation: 'lives-on-9', probe: [] }],
      (_c, count) => decidedOn(count, 'misrouted'),
      heldAt({ 'lives-on-9': there.last }),
    );
    expect(stored).toEqual([]);
    expect(elsewhere).toEqual(new Map([['lives-on-9', 9]]));
    expect(await stepsOf('lives-on-9')).toEqual([0]);
  });

  it('a writer whose epoch is gone writes nothing while holding the conversations, and is told it is fenced', async () => {
    const { epochs, last } = await conversationAt(11, 'held-fenced');
    await takePartitions(db.pool(), [11], 'successor');
    await expect(
      appendToConversations(db.pool(), countingRules, 11, epochs, [{ conversation: 'held-fenced', probe: [] }], (_c, count) => decidedOn(count, 'zombie'), heldAt({ 'held-fenced': last })),
    ).rejects.toBeInstanceOf(FencedError);
    expect(await stepsOf('held-fenced')).toEqual([0]);
  });
});

describe('appendToConversations, holding none of them', () => {
  const rowOf = async (conversation: string) =>
    (await db.pool().query<{ partition: number; last_position: string; head: unknown }>('SELECT partition, last_position, head FROM event_store.conversations WHERE key = $1', [conversation])).rows[0];

  it('new conversations: their first events and their rows in one statement and no transaction, their state and last position on the rows', async () => {
    const epochs = await takePartitions(db.pool(), [40], 'append-test');
    const { pool, counts } = counted(db.pool());
    const { stored, before, elsewhere } = await appendToConversations(
      pool, countingRules, 40, epochs,
      [{ conversation: 'new-b', probe: ['never-stored'] }, { conversation: 'new-a', probe: [] }],
      (conversation, count) => [...decidedOn(count, `${conversation} first`), ...decidedOn(count + 1, `${conversation} second`)],
    );
    expect(counts).toEqual({ statements: 1, connections: 0 });
    expect(elsewhere).toEqual(new Map());
    expect(before).toEqual(new Map([['new-a', 0], ['new-b', 0]]));
    expect(stored.map((e) => `${e.conversation} ${(e.data as { turn: string }).turn}`)).toEqual(['new-a new-a first', 'new-a new-a second', 'new-b new-b first', 'new-b new-b second']);
    expect(await stepsOf('new-a')).toEqual([0, 1]);
    const last = stored.filter((e) => e.conversation === 'new-a').at(-1)!.position;
    expect(await rowOf('new-a')).toEqual({ partition: 40, last_position: String(last), head: 2 });
    // The row is as a write leaves it: the next write holding it is one statement again.
    await appendToConversations(pool, countingRules, 40, epochs, [{ conversation: 'new-a', probe: [] }], (_c, count) => decidedOn(count, 'third'), () => ({ position: last, state: 2 }));
    expect(counts).toEqual({ statements: 2, connections: 0 });
    expect(await stepsOf('new-a')).toEqual([0, 1, 2]);
  });

  it('when one of them has a row already (here, or on another partition), the statement writes nothing: the transaction decides each on what is stored', async () => {
    const there = await conversationAt(41, 'old-on-41');
    const here = await conversationAt(42, 'old-on-42');
    const epochs = new Map([...there.epochs, ...here.epochs]);
    const { pool, counts } = counted(db.pool());
    const { stored, before, elsewhere } = await appendToConversations(
      pool, countingRules, 42, epochs,
      [{ conversation: 'fresh-42', probe: [] }, { conversation: 'old-on-42', probe: [] }, { conversation: 'old-on-41', probe: [] }],
      (conversation, count) => decidedOn(count, `${conversation} next`),
    );
    expect(counts.connections).toBe(1);
    expect(elsewhere).toEqual(new Map([['old-on-41', 41]]));
    expect(stored.map((e) => `${e.conversation} ${(e.data as { step: number }).step}`).sort()).toEqual(['fresh-42 0', 'old-on-42 1']);
    expect(before).toEqual(new Map([['fresh-42', 0], ['old-on-42', here.last]]));
    expect(await stepsOf('old-on-41')).toEqual([0]);
    expect((await rowOf('fresh-42')).partition).toBe(42);
  });

  it('a writer whose epoch is gone creates nothing, and is told it is fenced', async () => {
    const epochs = await takePartitions(db.pool(), [43], 'append-test');
    await takePartitions(db.pool(), [43], 'successor');
    await expect(appendToConversations(db.pool(), countingRules, 43, epochs, [{ conversation: 'never-made', probe: [] }], (_c, count) => decidedOn(count, 'zombie'))).rejects.toBeInstanceOf(FencedError);
    expect(await rowOf('never-made')).toBeUndefined();
    expect(await stepsOf('never-made')).toEqual([]);
  });

  it('two writers creating one conversation at once: one statement creates it, the other decides in a transaction on what that stored', async () => {
    const epochs = await takePartitions(db.pool(), [44], 'append-test');
    for (let round = 0; round < 5; round++) {
      const conversation = `raced-${round}`;
      const write = (label: string) => appendToConversations(db.pool(), countingRules, 44, epochs, [{ conversation, probe: [] }], (_c, count) => decidedOn(count, label));
      const [a, b] = await Promise.all([write('a'), write('b')]);
      expect([...a.stored, ...b.stored].map((e) => (e.data as { step: number }).step).sort()).toEqual([0, 1]);
      expect(await stepsOf(conversation)).toEqual([0, 1]);
      expect((await rowOf(conversation)).head).toBe(2);
    }
  });
});

describe('groupedWrites', () => {
  /** Conversations `keys` on `partition`, one event each, stored by one batch: the epochs and each one's last position. */
  async function heldTogether(partition: number, keys: string[]) {
    const epochs = await takePartitions(db.pool(), [partition], 'grouped-test');
    const { stored } = await appendToConversations(db.pool(), countingRules, partition, epochs, keys.map((conversation) => ({ conversation, probe: [] })), (_c, count) => decidedOn(count, 'first'));
    return { epochs, last: new Map(stored.map((e) => [e.conversation, e.position])) };
  }
  const traceOf = (n: number) => `00-${n.toString(16).padStart(32, '0')}-${'0'.repeat(15)}1-01`;
  const labels = (stored: { conversation: string; data: unknown }[] | null) => stored?.map((e) => [e.conversation, (e.data as { turn: string }).turn]) ?? null;

  it('the writes handed over together share one statement and one commit; each gets its own events, stored with its own trace', async () => {
    const keys = ['grouped-a', 'grouped-b', 'grouped-c'];
    const { epochs, last } = await heldTogether(30, keys);
    const { pool, counts } = counted(db.pool());
    const write = groupedWrites(pool, countingRules);
    const results = await Promise.all(
      keys.map((conversation, i) => write({ conversation, position: last.get(conversation)!, state: 1, events: decidedOn(1, `${conversation} second`), trace: traceOf(i + 1) }, epochs)),
    );
    expect(counts).toEqual({ statements: 1, connections: 0 });
    expect(results.map(labels)).toEqual(keys.map((k) => [[k, `${k} second`]]));
    for (const k of keys) expect(await stepsOf(k)).toEqual([0, 1]);
    const { rows } = await db.pool().query<{ conversation: string; trace: string }>(
      `SELECT conversation, trace FROM event_store.events WHERE conversation = ANY($1) AND trace IS NOT NULL ORDER BY conversation`,
      [keys],
    );
    expect(rows).toEqual(keys.map((conversation, i) => ({ conversation, trace: traceOf(i + 1) })));
    // Handed over one at a time, each is a statement of its own.
    await write({ conversation: 'grouped-a', position: results[0]![0].position, state: 2, events: decidedOn(2, 'third'), trace: null }, epochs);
    expect(counts.statements).toBe(2);
  });

  it(`at most ${WRITES_PER_STATEMENT} writes share a statement`, async () => {
    const keys = Array.from({ length: WRITES_PER_STATEMENT + 8 }, (_, i) => `bounded-${i}`);
    const { epochs, last } = await heldTogether(34, keys);
    const { pool, counts } = counted(db.pool());
    const write = groupedWrites(pool, countingRules);
    const results = await Promise.all(keys.map((conversation) => write({ conversation, position: last.get(conversation)!, state: 1, events: decidedOn(1, 'second'), trace: null }, epochs)));
    expect(counts).toEqual({ statements: 2, connections: 0 });
    expect(results.map(labels)).toEqual(keys.map((k) => [[k, 'second']]));
  });

  it('when one of them moved since its writer saw it, the statement writes nothing: the others are stored alone, and it alone answers null', async () => {
    const keys = ['grouped-moved-a', 'grouped-moved-b', 'grouped-moved-c'];
    const { epochs, last } = await heldTogether(31, keys);
    // Another writer (an ingest) appends to grouped-moved-b after what its runner holds.
    await appendToConversation(db.pool(), countingRules, 'grouped-moved-b', epochs, (count) => decidedOn(count, 'other'));
    const { pool, counts } = counted(db.pool());
    const write = groupedWrites(pool, countingRules);
    const results = await Promise.all(
      keys.map((conversation) => write({ conversation, position: last.get(conversation)!, state: 1, events: decidedOn(1, `${conversation} ours`), trace: null }, epochs)),
    );
    expect(results.map(labels)).toEqual([[['grouped-moved-a', 'grouped-moved-a ours']], null, [['grouped-moved-c', 'grouped-moved-c ours']]]);
    // The shared statement, then one each.
    expect(counts).toEqual({ statements: 4, connections: 0 });
    expect(await stepsOf('grouped-moved-a')).toEqual([0, 1]);
    expect(await stepsOf('grouped-moved-b')).toEqual([0, 1]); // the other writer's, nothing decided on the old state
    expect(await stepsOf('grouped-moved-c')).toEqual([0, 1]);
  });

  it('two writes of one conversation handed over together go one after the other: the first is stored, the second (decided on the same state) answers null', async () => {
    const { epochs, last } = await heldTogether(35, ['twice']);
    const { pool, counts } = counted(db.pool());
    const write = groupedWrites(pool, countingRules);
    const at = last.get('twice')!;
    const results = await Promise.all([
      write({ conversation: 'twice', position: at, state: 1, events: decidedOn(1, 'one'), trace: null }, epochs),
      write({ conversation: 'twice', position: at, state: 1, events: decidedOn(1, 'other'), trace: null }, epochs),
    ]);
    expect(results.map(labels)).toEqual([[['twice', 'one']], null]);
    expect(counts).toEqual({ statements: 2, connections: 0 });
    expect(await stepsOf('twice')).toEqual([0, 1]);
  });

  it("one write's error (a once key stored before) is its own: the others are stored", async () => {
    const keys = ['failing-a', 'failing-b'];
    const { epochs, last } = await heldTogether(32, keys);
    const write = groupedWrites(db.pool(), countingRules);
    const [failing, other] = await Promise.allSettled([
      // The very event stored first, again: its once key is taken.
      write({ conversation: 'failing-a', position: last.get('failing-a')!, state: 1, events: decidedOn(0, 'first'), trace: null }, epochs),
      write({ conversation: 'failing-b', position: last.get('failing-b')!, state: 1, events: decidedOn(1, 'second'), trace: null }, epochs),
    ]);
    expect(failing.status === 'rejected' && failing.reason).toBeInstanceOf(AlreadyStoredError);
    expect(failing.status === 'rejected' && (failing.reason as AlreadyStoredError).conversation).toBe('failing-a');
    expect(other.status === 'fulfilled' && labels(other.value)).toEqual([['failing-b', 'second']]);
    expect(await stepsOf('failing-a')).toEqual([0]);
    expect(await stepsOf('failing-b')).toEqual([0, 1]);
  });

  it('writes under other epochs (a rebalance between them) never share a statement: the stale one is not written', async () => {
    const stale = await heldTogether(33, ['rebalanced-a']);
    // The partition is taken again (a new epoch): the fresh writer holds it, the stale one does not.
    const fresh = await heldTogether(33, ['rebalanced-b']);
    const { pool, counts } = counted(db.pool());
    const write = groupedWrites(pool, countingRules);
    const results = await Promise.all([
      write({ conversation: 'rebalanced-a', position: stale.last.get('rebalanced-a')!, state: 1, events: decidedOn(1, 'stale'), trace: null }, stale.epochs),
      write({ conversation: 'rebalanced-b', position: fresh.last.get('rebalanced-b')!, state: 1, events: decidedOn(1, 'fresh'), trace: null }, fresh.epochs),
    ]);
    expect(results.map(labels)).toEqual([null, [['rebalanced-b', 'fresh']]]);
    expect(counts).toEqual({ statements: 2, connections: 0 });
    expect(await stepsOf('rebalanced-a')).toEqual([0]);
    // And through appendToConversation, the stale writer is told it is fenced.
    await expect(
      appendToConversation(db.pool(), countingRules, 'rebalanced-a', stale.epochs, (count) => decidedOn(count, 'stale'), { position: stale.last.get('rebalanced-a')!, state: 1 }, write),
    ).rejects.toBeInstanceOf(FencedError);
  });
});

describe('the pool (createPool)', () => {
  it('runs a prepared write on its session\'s generic plan: eight one-statement appends, none planned for its values', async () => {
    const { epochs, last } = await conversationAt(50, 'planned-once');
    // One connection, so every append is the same session's prepared statement.
    const pool = createPool(db.url(), 1);
    try {
      let position = last;
      for (let count = 1; count <= 8; count++) {
        const { stored } = await appendToConversation(pool, countingRules, 'planned-once', epochs, (c) => decidedOn(c, `step ${count}`), { position, state: count });
        position = stored[0].position;
      }
      const { rows } = await pool.query<{ generic_plans: string; custom_plans: string }>(
        `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'event-store-append-if-unchanged'`,
      );
      // A generic plan is made once and kept; PostgreSQL's default plans the first five executions for their
      // values (custom plans), and went on planning this statement at every execution.
      expect(rows.map((r) => ({ generic: Number(r.generic_plans), custom: Number(r.custom_plans) }))).toEqual([{ generic: 8, custom: 0 }]);
      expect(await stepsOf('planned-once')).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      await pool.end();
    }
  });
});
