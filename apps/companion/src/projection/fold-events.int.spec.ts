import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inputDigest, NO_CONTEXT } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { openReadModels } from '../read-models/data-source';
import { readConversationStatus } from '../queries/conversation-status';
import { parseCursor, readTranscriptPage, type TranscriptCursor } from '../queries/transcript-page';
import { readTurn } from '../queries/turn-view';
import { readTurnOfInput } from '../queries/turn-of-input';
import { readInput } from '../queries/input-view';
import { readEventsAfter } from '../queries/event-replay';
import { createFreshDatabase } from '../../../../test/support/companion/test-database';
import { chatWithToolCall, conversationLog } from '../../../../test/support/companion/conversation-log';
import { FOLD_PLANNING, foldEvents, freshAndRowsSql } from './fold-events';

let database: Awaited<ReturnType<typeof createFreshDatabase>>;
let readModels: DataSource;

beforeAll(async () => {
  database = await createFreshDatabase();
  readModels = await openReadModels(database.url);
});

afterAll(async () => {
  await readModels?.destroy();
  await database?.drop();
});

/** Every projection row of a conversation, without the key, in a stable order. */
async function projections(conversation: string) {
  const read = async (sql: string) => await readModels.query(sql, [conversation]);
  return {
    conversations: await read(`SELECT state, running_started_at FROM companion.conversations WHERE key = $1`),
    inputs: await read(`SELECT id, kind, text, messages, subject, accepted_at, position, state, rejection_code, rejection_message, steer_turn, steer_landed FROM companion.inputs WHERE conversation = $1 ORDER BY id`),
    turns: await read(`SELECT id, prompt_id, prompt_text, status, outcome, content, steered, started_at, ended_at FROM companion.turns WHERE conversation = $1 ORDER BY id`),
    transcript: await read(`SELECT position, part, id, role, text, turn, steered, at FROM companion.transcript WHERE conversation = $1 ORDER BY position, part`),
    events: await read(`SELECT position, type, data, at FROM companion.events WHERE conversation = $1 ORDER BY position`),
  };
}

/**
 * A turn steered mid-way: a chat, a reply with a tool call, a steer landed on the turn while the
 * tool runs (and a follow-up chat), the steer taken at the step, the answer after it.
 */
function steeredTurn(key: string) {
  const log = conversationLog(key);
  const call = { id: 'call-1', name: 'wait', arguments: '{"ms":10}' };
  const steer = { id: 's1', text: 'Make it Porto instead' };
  return [
    log.accepted('i1', 'Plan a trip to Lisbon'),
    log.started('t1', { id: 'i1', text: 'Plan a trip to Lisbon' }),
    log.replied('t1', 0, 'Let me check the weather.', [call]),
    log.toolStarted('t1', 0, call),
    log.steer(steer.id, steer.text),
    log.decided(steer, 't1'),
    log.accepted('c2', 'And hotels?'),
    log.toolEnded('t1', 0, 'call-1', 'waited 10 ms'),
    log.taken('t1', 0, steer),
    log.replied('t1', 1, 'Porto is sunny: go in May.'),
    log.ended('t1', 'Let me check the weather.\n\nPorto is sunny: go in May.', { steered: [steer] }),
  ];
}

const allMessages = async (conversation: string) => (await readTranscriptPage(readModels, conversation, { after: null, limit: 200 })).items;

/** The read models, counting the statements each transaction's connection sends between its BEGIN and its COMMIT. */
function countingStatements(dataSource: DataSource) {
  const counts: number[] = [];
  const counted = new Proxy(dataSource, {
    get(target, property, receiver) {
      if (property !== 'transaction') return Reflect.get(target, property, receiver);
      return (work: (manager: DataSource['manager']) => Promise<unknown>) =>
        target.transaction(async (manager) => {
          const client = (await manager.queryRunner!.connect()) as { query: (...args: unknown[]) => unknown };
          const query = client.query;
          let sent = 0;
          client.query = function (this: unknown, ...args: unknown[]) {
            sent++;
            return query.apply(this, args);
          };
          try {
            return await work(manager);
          } finally {
            client.query = query;
            counts.push(sent);
          }
        });
    },
  });
  return { counted, counts };
}

describe('foldEvents', () => {
  it('folds a batch in three statements however many events and conversations it holds (the locks; the ids and the rows; every table)', async () => {
    const { counted, counts } = countingStatements(readModels);
    await foldEvents(counted, chatWithToolCall('count/one').slice(0, 1));
    await foldEvents(counted, Array.from({ length: 6 }, (_, i) => steeredTurn(`count/many-${i}`)).flat());
    expect(counts).toEqual([3, 3]);
    expect((await projections('count/many-5')).turns).toHaveLength(1);
  });

  it('reads every row by an index probe, in the one plan it keeps from its first batch on empty tables (never a scan of a whole table)', async () => {
    // The fold's statements are planned once per connection (FOLD_PLANNING), generically, and a
    // plan made on empty tables is kept while they grow, until an ANALYZE: a scan of a whole
    // table there is a scan of a large one later (as an anti-join, the look for copies once
    // hashed every copy on every batch: 80 ms a batch at 200,000 copies).
    const runner = readModels.createQueryRunner();
    try {
      await runner.startTransaction();
      await runner.query(`SELECT ${FOLD_PLANNING}`);
      await runner.query(`PREPARE fresh_and_rows AS ${freshAndRowsSql(readModels.manager)}`);
      const params = `ARRAY['c'], ARRAY['c'], ARRAY['i'], ARRAY['c'], ARRAY['t'], ARRAY['e'], ARRAY['c'], ARRAY[1]::bigint[], ARRAY['c'], ARRAY['t']`;
      const plan = ((await runner.query(`EXPLAIN EXECUTE fresh_and_rows(${params})`)) as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
      expect(plan, plan).not.toMatch(/Seq Scan|Hash/);
      expect(plan, plan).toMatch(/Index Only Scan using events_pkey on events c[^\n]*\n\s+Index Cond: \(\(conversation = b.conversation\) AND \("position" = b."position"\)\)/);
      expect(plan, plan).toMatch(/Index Scan on conversations_pkey[^\n]*\n\s+Index Cond: \(key = ANY \(\$1\)\)/);
      expect(plan, plan).toMatch(/Index Scan using inputs_pkey on inputs "row"[^\n]*\n\s+Index Cond: \(\(conversation = k.conversation\) AND \(id = k.id\)\)/);
      // On empty tables the planner finds the turns' two indexes on (conversation, …) as cheap:
      // either is a probe bounded by the conversation; once ANALYZE has seen rows, the key's.
      expect(plan, plan).toMatch(/Index Scan using turns_\w+ on turns row_1[^\n]*\n\s+Index Cond: \(conversation = k_1.conversation/);
      // A turn's approvals: one probe of the index by turn.
      expect(plan, plan).toMatch(/Index Scan using approvals_by_turn on approvals row_2[^\n]*\n\s+Index Cond: \(\(conversation = k_2.conversation\) AND \(turn = k_2.id\)\)/);
      await runner.query('DEALLOCATE fresh_and_rows');
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  it('shows a chat queued when accepted, running once its turn starts, and the conversation idle when the turn ends', async () => {
    const key = 'user-42/trip';
    const [accepted, started, ...rest] = chatWithToolCall(key);
    const ended = rest.pop()!;

    await foldEvents(readModels, [accepted]);
    expect(await readConversationStatus(readModels, key)).toEqual({
      key,
      running: null,
      steering: [],
      queue: [{ id: 'i1', kind: 'chat', text: 'Plan a trip to Lisbon', revision: 0 }],
      lastInputId: 'i1',
      agent: null,
      context: NO_CONTEXT,
      owner: 'alice',
      grants: [],
      todos: [],
      awaiting: [],
      heldUntil: null,
      schedules: [],
      position: expect.any(Number),
    });
    expect(await allMessages(key)).toEqual([]);

    await foldEvents(readModels, [started, ...rest]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1', startedAt: started.at },
      queue: [],
      lastInputId: 'i1',
    });
    expect(await readTurn(readModels, key, 't1')).toEqual({
      id: 't1',
      prompt: { id: 'i1', text: 'Plan a trip to Lisbon' },
      status: 'running',
      outcome: null,
      steered: [],
      content: 'Let me check the weather.\n\nLisbon is sunny: go in May.',
      startedAt: started.at,
      agent: null,
      usage: null,
      woundDown: false,
      rolledBack: false,
      approvals: [],
      endedAt: null,
    });

    await foldEvents(readModels, [ended]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({ running: null, queue: [], lastInputId: 'i1', owner: 'alice' });
    expect(await readTurn(readModels, key, 't1')).toMatchObject({
      status: 'completed',
      outcome: null,
      content: 'Let me check the weather.\n\nLisbon is sunny: go in May.',
      agent: null,
      usage: null,
      endedAt: ended.at,
    });
    expect(await allMessages(key)).toEqual([
      { id: 'i1', role: 'user', text: 'Plan a trip to Lisbon', turn: 't1', steered: false, rolledBack: false, at: accepted.at },
      { id: 't1/0', role: 'assistant', text: 'Let me check the weather.', turn: 't1', steered: false, rolledBack: false, at: rest[0].at },
      { id: 't1/1', role: 'assistant', text: 'Lisbon is sunny: go in May.', turn: 't1', steered: false, rolledBack: false, at: rest[3].at },
    ]);
    expect(await readInput(readModels, key, 'i1')).toEqual({
      id: 'i1',
      kind: 'chat',
      text: 'Plan a trip to Lisbon',
      messages: ['Plan a trip to Lisbon'],
      subject: 'alice',
      steer: null,
      state: 'delivered',
      rejection: null,
      position: expect.any(Number),
    });
    expect((await readEventsAfter(readModels, key, { after: null, limit: 500 })).items).toEqual(chatWithToolCall(key));
    expect((await readEventsAfter(readModels, key, { after: 5, limit: 500 })).items.map((e) => e.position)).toEqual([6, 7]);
  });

  it('answers follow-ups in order: the second chat waits in the queue while the first turn runs', async () => {
    const key = 'queue-order';
    const log = conversationLog(key);
    await foldEvents(readModels, [
      log.accepted('a', 'first', 'bob'),
      log.accepted('b', 'second', 'carol'),
      log.started('t-a', { id: 'a', text: 'first' }),
      log.accepted('c', 'third', 'bob'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't-a' },
      queue: [
        { id: 'b', kind: 'chat', text: 'second' },
        { id: 'c', kind: 'chat', text: 'third' },
      ],
      lastInputId: 'c',
      agent: null,
      context: NO_CONTEXT,
      owner: 'bob',
      grants: [],
      todos: [],
    });
  });

  it('changes nothing when the same batch is folded twice', async () => {
    const key = 'twice';
    const batch = chatWithToolCall(key);
    expect(await foldEvents(readModels, batch)).toEqual({ applied: 7, duplicates: 0 });
    const once = await projections(key);
    expect(await foldEvents(readModels, batch)).toEqual({ applied: 0, duplicates: 7 });
    expect(await projections(key)).toEqual(once);
    expect(once.transcript).toHaveLength(3);
  });

  it('changes nothing when an event comes again in a later batch', async () => {
    const events = (key: string) => chatWithToolCall(key);
    const clean = events('redelivered-reference');
    for (const e of clean) await foldEvents(readModels, [e]);

    const key = 'redelivered';
    const [accepted, started, reply, toolStarted, toolEnded, finalReply, ended] = events(key);
    await foldEvents(readModels, [accepted, started, reply]);
    // The relay published the reply twice; Kafka redelivered the start with it.
    expect(await foldEvents(readModels, [started, reply, toolStarted])).toEqual({ applied: 1, duplicates: 2 });
    expect(await foldEvents(readModels, [toolEnded, reply, finalReply])).toEqual({ applied: 2, duplicates: 1 });
    expect((await readTurn(readModels, key, 't1'))?.content).toBe('Let me check the weather.\n\nLisbon is sunny: go in May.');
    await foldEvents(readModels, [ended, accepted, finalReply]);

    expect(await projections(key)).toEqual(await projections('redelivered-reference'));
  });

  it('folds an event repeated within one batch once', async () => {
    const key = 'repeated-in-batch';
    const [accepted, started, reply] = chatWithToolCall(key);
    expect(await foldEvents(readModels, [accepted, started, reply, reply, started])).toEqual({ applied: 3, duplicates: 2 });
    expect((await readTurn(readModels, key, 't1'))?.content).toBe('Let me check the weather.');
  });

  it('folds each event once when two consumers fold overlapping batches at the same time', async () => {
    const key = 'rebalance';
    const batch = chatWithToolCall(key);
    // As a rebalance has them: the old owner folded the first events and is folding the next
    // ones, their offsets not committed yet, when the new owner starts from the last committed
    // offset, so its batch holds every event from there. (A batch that lacks the events before
    // it that nobody folded cannot happen: each consumer's batches follow the partition's log;
    // modelled so, this test failed one run in three, folding turn.ended before turn.started.)
    await foldEvents(readModels, batch.slice(0, 2));
    const results = await Promise.all([foldEvents(readModels, batch.slice(2, 6)), foldEvents(readModels, batch)]);
    expect(results.reduce((sum, r) => sum + r.applied, 0)).toBe(5);
    expect(await readTurn(readModels, key, 't1')).toMatchObject({ status: 'completed' });
    expect((await allMessages(key)).map((m) => m.id)).toEqual(['i1', 't1/0', 't1/1']);
  });

  it('loses no update when batches of one conversation are folded at the same time', async () => {
    const key = 'concurrent';
    const log = conversationLog(key);
    const accepted = Array.from({ length: 12 }, (_, i) => log.accepted(`c${i + 1}`, `chat ${i + 1}`));
    // Each batch is a run of the log from its start, as consumers folding the same partition
    // during a rebalance hold them (each in log order: the state is folded in that order).
    const batches = accepted.map((_, i) => accepted.slice(0, i + 1));
    await Promise.all(batches.reverse().map((batch) => foldEvents(readModels, batch)));
    const status = await readConversationStatus(readModels, key);
    expect(status.queue.map((q) => q.id)).toEqual(Array.from({ length: 12 }, (_, i) => `c${i + 1}`));
    expect(status.lastInputId).toBe('c12');
  });

  it('pages the transcript oldest first with a cursor until next is null', async () => {
    const key = 'pages';
    const log = conversationLog(key);
    await foldEvents(readModels, [
      log.accepted('p1', 'one'),
      log.started('t1', { id: 'p1', text: 'one' }),
      log.replied('t1', 0, 'two'),
      log.ended('t1', 'two'),
      log.accepted('p2', ['three', 'four']),
      log.started('t2', { id: 'p2', text: 'three\n\nfour' }),
      log.replied('t2', 0, ''),
      log.replied('t2', 1, 'five'),
      log.ended('t2', 'five'),
    ]);

    const texts: string[] = [];
    const cursors: (string | null)[] = [];
    let after: TranscriptCursor | null = null;
    do {
      const page = await readTranscriptPage(readModels, key, { after, limit: 2 });
      texts.push(...page.items.map((m) => m.text));
      cursors.push(page.next);
      after = page.next === null ? null : parseCursor(page.next);
    } while (after !== null);

    expect(texts).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(cursors).toHaveLength(3);
    expect(cursors[2]).toBeNull();
    expect(await readTranscriptPage(readModels, key, { after: parseCursor(cursors[1]!), limit: 2 })).toMatchObject({
      items: [{ text: 'five' }],
      next: null,
    });
  });

  it('enters a chat of several messages as one user row per message, under <input>#<n>', async () => {
    const key = 'several';
    const log = conversationLog(key);
    await foldEvents(readModels, [
      log.accepted('multi', ['Flights to Lisbon?', 'And hotels?', 'Budget 800 EUR.']),
      log.started('t1', { id: 'multi', text: 'Flights to Lisbon?\n\nAnd hotels?\n\nBudget 800 EUR.' }),
      log.replied('t1', 0, 'Here is a plan.'),
    ]);
    expect((await allMessages(key)).map(({ id, role, text }) => ({ id, role, text }))).toEqual([
      { id: 'multi#1', role: 'user', text: 'Flights to Lisbon?' },
      { id: 'multi#2', role: 'user', text: 'And hotels?' },
      { id: 'multi#3', role: 'user', text: 'Budget 800 EUR.' },
      { id: 't1/0', role: 'assistant', text: 'Here is a plan.' },
    ]);
    expect(await readTurnOfInput(readModels, key, 'multi')).toMatchObject({ id: 't1', prompt: { id: 'multi' } });
    expect(await readInput(readModels, key, 'multi')).toMatchObject({
      text: 'Flights to Lisbon?\n\nAnd hotels?\n\nBudget 800 EUR.',
      messages: ['Flights to Lisbon?', 'And hotels?', 'Budget 800 EUR.'],
    });
  });

  it('keeps how a turn ended and the steered messages it took, and finds the turn by a taken input', async () => {
    const key = 'stopped';
    const log = conversationLog(key);
    await foldEvents(readModels, [
      log.accepted('s1', 'go'),
      log.started('t1', { id: 's1', text: 'go' }),
      log.replied('t1', 0, 'Going.'),
      log.ended('t1', 'Going.', { status: 'stopped', outcome: 'stopped by alice', steered: [{ id: 'steer-1', text: 'faster' }] }),
    ]);
    expect(await readTurn(readModels, key, 't1')).toMatchObject({
      status: 'stopped',
      outcome: 'stopped by alice',
      steered: [{ id: 'steer-1', text: 'faster' }],
    });
    expect(await readTurnOfInput(readModels, key, 'steer-1')).toMatchObject({ id: 't1' });
    expect(await readTurnOfInput(readModels, key, 'never-sent')).toBeNull();
    expect(await readConversationStatus(readModels, key)).toMatchObject({ running: null });
  });

  it('shows a steer taken mid-turn in steering, then as a steered user row between the two answers, and in the turn it joined', async () => {
    const key = 'steered';
    const events = steeredTurn(key);
    const [accepted, started, reply, toolStarted, steer, decided, followUp, toolEnded, taken, finalReply, ended] = events;

    await foldEvents(readModels, [accepted, started, reply, toolStarted, steer]);
    // Accepted, not yet decided: it waits for the running turn.
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1' },
      steering: [{ id: 's1', text: 'Make it Porto instead' }],
      queue: [],
      lastInputId: 's1',
    });
    expect(await readInput(readModels, key, 's1')).toMatchObject({ kind: 'steer', state: 'pending', steer: null });

    await foldEvents(readModels, [decided, followUp, toolEnded]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      steering: [{ id: 's1', text: 'Make it Porto instead' }],
      queue: [{ id: 'c2', kind: 'chat', text: 'And hotels?' }],
      lastInputId: 'c2',
    });
    expect(await readInput(readModels, key, 's1')).toEqual({
      id: 's1',
      kind: 'steer',
      text: 'Make it Porto instead',
      messages: ['Make it Porto instead'],
      subject: 'alice',
      steer: { turn: 't1', landed: true },
      state: 'pending',
      rejection: null,
      position: expect.any(Number),
    });

    await foldEvents(readModels, [taken]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1' },
      steering: [],
      queue: [{ id: 'c2', kind: 'chat', text: 'And hotels?' }],
    });
    expect(await readTurn(readModels, key, 't1')).toMatchObject({ status: 'running', steered: [{ id: 's1', text: 'Make it Porto instead' }] });
    expect(await readTurnOfInput(readModels, key, 's1')).toMatchObject({ id: 't1', prompt: { id: 'i1' } });
    expect(await readInput(readModels, key, 's1')).toMatchObject({ state: 'delivered', steer: { turn: 't1', landed: true } });

    await foldEvents(readModels, [finalReply, ended]);
    expect(await readTurn(readModels, key, 't1')).toMatchObject({
      status: 'completed',
      steered: [{ id: 's1', text: 'Make it Porto instead' }],
      content: 'Let me check the weather.\n\nPorto is sunny: go in May.',
    });
    expect(await readTurnOfInput(readModels, key, 's1')).toMatchObject({ id: 't1' });
    expect(await allMessages(key)).toEqual([
      { id: 'i1', role: 'user', text: 'Plan a trip to Lisbon', turn: 't1', steered: false, rolledBack: false, at: accepted.at },
      { id: 't1/0', role: 'assistant', text: 'Let me check the weather.', turn: 't1', steered: false, rolledBack: false, at: reply.at },
      { id: 's1', role: 'user', text: 'Make it Porto instead', turn: 't1', steered: true, rolledBack: false, at: steer.at },
      { id: 't1/1', role: 'assistant', text: 'Porto is sunny: go in May.', turn: 't1', steered: false, rolledBack: false, at: finalReply.at },
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({ running: null, steering: [], queue: [{ id: 'c2' }] });
  });

  it('queues a steer that did not land with kind steer, in order, until it is answered as a turn of its own', async () => {
    const key = 'not-landed';
    const log = conversationLog(key);
    const steer = { id: 's1', text: 'Also look at Porto' };
    await foldEvents(readModels, [
      log.accepted('i1', 'Plan a trip to Lisbon'),
      log.started('t1', { id: 'i1', text: 'Plan a trip to Lisbon' }),
      log.steer(steer.id, steer.text),
      log.decided(steer, null),
      log.accepted('c2', 'And hotels?'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1' },
      steering: [],
      queue: [
        { id: 's1', kind: 'steer', text: 'Also look at Porto' },
        { id: 'c2', kind: 'chat', text: 'And hotels?' },
      ],
    });
    expect(await readInput(readModels, key, 's1')).toMatchObject({ state: 'pending', steer: { turn: null, landed: false } });
    expect(await readTurnOfInput(readModels, key, 's1')).toBeNull();

    await foldEvents(readModels, [
      log.replied('t1', 0, 'Lisbon it is.'),
      log.ended('t1', 'Lisbon it is.'),
      log.started('t2', steer),
      log.replied('t2', 0, 'Porto too.'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't2' },
      steering: [],
      queue: [{ id: 'c2', kind: 'chat', text: 'And hotels?' }],
    });
    expect(await readTurnOfInput(readModels, key, 's1')).toMatchObject({ id: 't2', prompt: steer, steered: [] });
    expect(await readTurn(readModels, key, 't1')).toMatchObject({ steered: [] });
    expect(await readInput(readModels, key, 's1')).toMatchObject({ state: 'delivered', steer: { turn: null, landed: false } });
    expect((await allMessages(key)).map(({ id, role, turn, steered }) => ({ id, role, turn, steered }))).toEqual([
      { id: 'i1', role: 'user', turn: 't1', steered: false },
      { id: 't1/0', role: 'assistant', turn: 't1', steered: false },
      { id: 's1', role: 'user', turn: 't2', steered: false },
      { id: 't2/0', role: 'assistant', turn: 't2', steered: false },
    ]);
  });

  it('moves the landed steers a stopped turn did not take to the queue, in the order they were accepted', async () => {
    const key = 'stopped-steers';
    const log = conversationLog(key);
    const s0 = { id: 's0', text: 'taken before the stop' };
    const s1 = { id: 's1', text: 'first untaken' };
    const s2 = { id: 's2', text: 'second untaken' };
    await foldEvents(readModels, [
      log.accepted('a', 'go'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.steer(s0.id, s0.text),
      log.decided(s0, 't1'),
      log.replied('t1', 0, 'Going.'),
      log.taken('t1', 0, s0),
      log.steer(s1.id, s1.text),
      log.decided(s1, 't1'),
      log.accepted('c2', 'a follow-up'),
      log.steer(s2.id, s2.text),
      log.decided(s2, 't1'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1' },
      steering: [s1, s2],
      queue: [{ id: 'c2', kind: 'chat', text: 'a follow-up' }],
    });

    const stopped = [log.stopRequested('stop-1', 't1'), log.ended('t1', 'Going.', { status: 'stopped', outcome: 'stopped', steered: [s0] })];
    await foldEvents(readModels, stopped);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: null,
      steering: [],
      queue: [
        { id: 's1', kind: 'steer', text: 'first untaken' },
        { id: 'c2', kind: 'chat', text: 'a follow-up' },
        { id: 's2', kind: 'steer', text: 'second untaken' },
      ],
    });
    expect(await readTurn(readModels, key, 't1')).toMatchObject({ status: 'stopped', steered: [s0] });
    expect(await readTurnOfInput(readModels, key, 's0')).toMatchObject({ id: 't1' });
    // The decision stays what the worker said, so a repeated steer id gets the same answer.
    expect(await readInput(readModels, key, 's1')).toMatchObject({ state: 'pending', steer: { turn: 't1', landed: true } });

    // The worker answers them as turns of their own, in order.
    await foldEvents(readModels, [log.started('t2', s1)]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't2' },
      steering: [],
      queue: [{ id: 'c2' }, { id: 's2', kind: 'steer' }],
    });
    expect(await readTurnOfInput(readModels, key, 's1')).toMatchObject({ id: 't2', prompt: s1 });
  });

  it('changes nothing when a batch with steers is folded twice, whole or in parts', async () => {
    const key = 'steered-twice';
    const batch = steeredTurn(key);
    expect(await foldEvents(readModels, batch)).toEqual({ applied: batch.length, duplicates: 0 });
    const once = await projections(key);
    expect(await foldEvents(readModels, batch)).toEqual({ applied: 0, duplicates: batch.length });
    expect(await foldEvents(readModels, batch.slice(4, 9))).toEqual({ applied: 0, duplicates: 5 });
    expect(await projections(key)).toEqual(once);
    expect(once.transcript.map((m: { id: string }) => m.id)).toEqual(['i1', 't1/0', 's1', 't1/1']);
    expect(once.turns).toMatchObject([{ steered: [{ id: 's1', text: 'Make it Porto instead' }] }]);

    // The same events one by one, each delivered twice, give the same projections.
    const reference = 'steered-one-by-one';
    for (const e of steeredTurn(reference)) {
      await foldEvents(readModels, [e]);
      await foldEvents(readModels, [e]);
    }
    expect(await projections(reference)).toEqual(once);
  });

  it('takes a retracted and a discarded input out of status, and shows each one as such', async () => {
    const key = 'retracted-discarded';
    const log = conversationLog(key);
    const s1 = { id: 's1', text: 'faster' };
    await foldEvents(readModels, [
      log.accepted('a', 'go'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.delivered({ id: 'a', kind: 'chat' }, 't1'),
      log.accepted('c2', 'second'),
      log.steer(s1.id, s1.text),
      log.decided(s1, 't1'),
      log.accepted('c3', 'third'),
      log.accepted('c4', 'fourth'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      steering: [s1],
      queue: [{ id: 'c2' }, { id: 'c3' }, { id: 'c4' }],
      lastInputId: 'c4',
    });

    await foldEvents(readModels, [
      log.retracted({ id: 'c2', kind: 'chat', text: 'second' }, 'retract-1'),
      log.retracted({ id: 's1', kind: 'steer', text: 'faster' }, 'retract-2'),
      log.retractRefused('retract-3', 'a'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1' },
      steering: [],
      queue: [{ id: 'c3' }, { id: 'c4' }],
      lastInputId: 'c4',
    });
    expect(await readInput(readModels, key, 'c2')).toEqual({
      id: 'c2',
      kind: 'chat',
      text: 'second',
      messages: ['second'],
      subject: 'alice',
      steer: null,
      state: 'retracted',
      rejection: null,
      position: expect.any(Number),
    });
    expect(await readInput(readModels, key, 's1')).toMatchObject({ state: 'retracted', steer: { turn: 't1', landed: true } });
    // A refused retraction changes nothing: the input it named was delivered already.
    expect(await readInput(readModels, key, 'a')).toMatchObject({ state: 'delivered' });

    await foldEvents(readModels, [
      log.stopRequested('stop-1', 't1'),
      log.discarded({ id: 'c3', kind: 'chat', text: 'third' }, 'stop-1'),
      log.discarded({ id: 'c4', kind: 'chat', text: 'fourth' }, 'stop-1'),
      log.ended('t1', '', { status: 'stopped', outcome: 'stopped' }),
    ]);
    expect(await readConversationStatus(readModels, key)).toEqual({
      key,
      running: null,
      steering: [],
      queue: [],
      lastInputId: 'c4',
      agent: null,
      context: NO_CONTEXT,
      owner: 'alice',
      grants: [],
      todos: [],
      awaiting: [],
      heldUntil: null,
      schedules: [],
      position: expect.any(Number),
    });
    expect(await readInput(readModels, key, 'c3')).toMatchObject({ state: 'discarded', rejection: null });
    expect(await readInput(readModels, key, 'c4')).toMatchObject({ state: 'discarded' });
    // Neither the retraction nor the discard entered the transcript; their events are there for replay.
    expect((await allMessages(key)).map((m) => m.id)).toEqual(['a']);
    expect((await readEventsAfter(readModels, key, { after: null, limit: 500 })).items.map((e) => e.type)).toContain('retract.refused');
  });

  it('keeps the first final state: a discard after a retraction, or a late delivery, changes nothing', async () => {
    const key = 'first-state-stands';
    const log = conversationLog(key);
    const c2 = { id: 'c2', kind: 'chat' as const, text: 'second' };
    await foldEvents(readModels, [
      log.accepted('a', 'go'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.accepted(c2.id, c2.text),
      log.retracted(c2, 'retract-1'),
      log.discarded(c2, 'stop-1'),
      log.discarded({ id: 'a', kind: 'chat', text: 'go' }, 'stop-1'),
    ]);
    expect(await readInput(readModels, key, 'c2')).toMatchObject({ state: 'retracted' });
    expect(await readInput(readModels, key, 'a')).toMatchObject({ state: 'delivered' });
  });

  it("records a rejected input as refused with its code, message and text's digest (never its text): never pending, and not the last input", async () => {
    const key = 'rejected';
    const log = conversationLog(key);
    const tooMuch = { id: 'r1', kind: 'chat' as const, text: 'one more\n\nand another' };
    const stale = { id: 'r2', kind: 'steer' as const, text: 'change course' };
    await foldEvents(readModels, [
      log.rejected({ id: 'r0', kind: 'chat', text: 'hello?' }, 'precondition_failed', 'the last accepted input is none, not x'),
      log.accepted('a', 'go', 'bob'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.accepted('c2', 'second'),
      log.rejected(tooMuch, 'queue_full', 'the follow-up queue is full (0 steering, 4 queued; at most 4)'),
      log.rejected(stale, 'precondition_failed', 'the last accepted input is c2, not a'),
      log.rejected({ id: 'r3', kind: 'chat', text: 'now!' }, 'busy', 'a turn is running (t1) and onBusy is reject'),
    ]);
    expect(await readConversationStatus(readModels, key)).toEqual({
      key,
      running: { turn: 't1', startedAt: expect.any(String) },
      steering: [],
      queue: [{ id: 'c2', kind: 'chat', text: 'second', revision: 0 }],
      lastInputId: 'c2',
      // The first input was refused: the owner is the subject of the first accepted one.
      agent: null,
      context: NO_CONTEXT,
      owner: 'bob',
      grants: [],
      todos: [],
      awaiting: [],
      heldUntil: null,
      schedules: [],
      position: expect.any(Number),
    });
    expect(await readInput(readModels, key, 'r1')).toEqual({
      id: 'r1',
      kind: 'chat',
      digest: inputDigest('one more\n\nand another'),
      subject: null,
      steer: null,
      state: 'rejected',
      rejection: { code: 'queue_full', message: 'the follow-up queue is full (0 steering, 4 queued; at most 4)' },
      position: expect.any(Number),
    });
    expect(await readInput(readModels, key, 'r2')).toMatchObject({
      kind: 'steer',
      state: 'rejected',
      rejection: { code: 'precondition_failed', message: 'the last accepted input is c2, not a' },
    });
    expect(await readInput(readModels, key, 'r3')).toMatchObject({ state: 'rejected', rejection: { code: 'busy' } });

    // The same id refused again (the client retried) keeps the first refusal.
    await foldEvents(readModels, [log.rejected({ ...tooMuch, text: 'other' }, 'busy', 'other')]);
    expect(await readInput(readModels, key, 'r1')).toMatchObject({ digest: inputDigest('one more\n\nand another'), rejection: { code: 'queue_full' } });
    // No table of the companion holds a refused text.
    const [{ n }] = (await readModels.query(
      `SELECT (SELECT count(*) FROM companion.inputs t WHERE row_to_json(t)::text LIKE '%one more%')
            + (SELECT count(*) FROM companion.events t WHERE row_to_json(t)::text LIKE '%one more%') AS n`,
    )) as { n: string }[];
    expect(Number(n)).toBe(0);
    expect(await readTurnOfInput(readModels, key, 'r1')).toBeNull();
    expect((await allMessages(key)).map((m) => m.id)).toEqual(['a']);
  });

  it('puts a chat that interrupts or rolls back the running turn first in the queue, and runs it next', async () => {
    const key = 'interrupt';
    const log = conversationLog(key);
    const late = { id: 'late', text: 'also Porto' };
    await foldEvents(readModels, [
      log.accepted('a', 'go'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.accepted('c2', 'second'),
      log.accepted('c3', 'third'),
      log.accepted('now', 'forget that, plan Rome'),
      log.stopRequested('now', 't1', 'interrupt'),
      log.steer(late.id, late.text),
      log.decided(late, null),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      running: { turn: 't1' },
      steering: [],
      queue: [
        { id: 'now', kind: 'chat', text: 'forget that, plan Rome' },
        { id: 'c2', kind: 'chat' },
        { id: 'c3', kind: 'chat' },
        { id: 'late', kind: 'steer' },
      ],
      lastInputId: 'late',
    });

    await foldEvents(readModels, [
      log.ended('t1', '', { status: 'superseded', outcome: 'interrupted by a newer input at a step' }),
      log.started('t2', { id: 'now', text: 'forget that, plan Rome' }),
      log.delivered({ id: 'now', kind: 'chat' }, 't2'),
      log.accepted('undo', 'no, undo that'),
      log.stopRequested('undo', 't2', 'rollback'),
      // A plain stop names no input: the queue keeps its order.
      log.stopRequested('stop-1', 't2'),
    ]);
    expect(await readInput(readModels, key, 'now')).toMatchObject({ state: 'delivered' });
    expect((await readConversationStatus(readModels, key)).queue.map((q) => q.id)).toEqual(['undo', 'c2', 'c3', 'late']);
    expect(await readTurn(readModels, key, 't1')).toMatchObject({ status: 'superseded' });
  });

  it("hides the rows of rolled-back turns (a rollback's, a chat's onBusy rollback) from the transcript unless asked, marks them, and says so on the turn", async () => {
    const key = 'rolled-back';
    const log = conversationLog(key);
    await foldEvents(readModels, [
      log.accepted('a', 'keep'),
      log.started('t1', { id: 'a', text: 'keep' }),
      log.replied('t1', 0, 'kept'),
      log.ended('t1', 'kept'),
      log.accepted('b', 'drop'),
      log.started('t2', { id: 'b', text: 'drop' }),
      log.replied('t2', 0, 'dropped'),
      log.ended('t2', 'dropped'),
      log.rolledBack('rb', ['t2']),
      log.accepted('c', 'half'),
      log.started('t3', { id: 'c', text: 'half' }),
      log.replied('t3', 0, 'half done'),
      log.accepted('d', 'instead'),
      log.stopRequested('d', 't3', 'rollback'),
      log.ended('t3', 'half done', { status: 'stopped', outcome: 'rolled back' }),
    ]);
    expect((await allMessages(key)).map((m) => m.id)).toEqual(['a', 't1/0']);
    const all = (await readTranscriptPage(readModels, key, { after: null, limit: 200, rolledBack: true })).items;
    expect(all.map((m) => [m.id, m.rolledBack])).toEqual([
      ['a', false],
      ['t1/0', false],
      ['b', true],
      ['t2/0', true],
      ['c', true],
      ['t3/0', true],
    ]);
    expect((await readTurn(readModels, key, 't1'))?.rolledBack).toBe(false);
    expect(await readTurn(readModels, key, 't2')).toMatchObject({ status: 'completed', rolledBack: true, content: 'dropped' });
    expect(await readTurn(readModels, key, 't3')).toMatchObject({ status: 'stopped', rolledBack: true });
  });

  it('shows a promoted follow-up as a steer: landed, it moves to steering; not landed, it stays in the queue', async () => {
    const key = 'promoted';
    const log = conversationLog(key);
    await foldEvents(readModels, [
      log.accepted('a', 'go'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.accepted('c2', 'second'),
      log.accepted('c3', 'third'),
      log.decided({ id: 'c3', text: 'third' }, 't1'),
      log.decided({ id: 'c2', text: 'second' }, null),
      log.promoteRefused('promote-3', 'a'),
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({
      steering: [{ id: 'c3', text: 'third' }],
      queue: [{ id: 'c2', kind: 'steer', text: 'second' }],
    });
    expect(await readInput(readModels, key, 'c3')).toMatchObject({ kind: 'chat', state: 'pending', steer: { turn: 't1', landed: true } });
  });

  it('changes nothing when queue-control events come again, whole or one by one', async () => {
    const controls = (key: string) => {
      const log = conversationLog(key);
      return [
        log.rejected({ id: 'r0', kind: 'chat', text: 'early' }, 'busy', 'a turn is running'),
        log.accepted('a', 'go'),
        log.started('t1', { id: 'a', text: 'go' }),
        log.delivered({ id: 'a', kind: 'chat' }, 't1'),
        log.accepted('c2', 'second'),
        log.accepted('c3', 'third'),
        log.accepted('now', 'instead'),
        log.stopRequested('now', 't1', 'rollback'),
        log.retracted({ id: 'c2', kind: 'chat', text: 'second' }, 'retract-1'),
        log.rejected({ id: 'r1', kind: 'steer', text: 'late' }, 'queue_full', 'the queue is full'),
        log.ended('t1', '', { status: 'stopped', outcome: 'rolled back' }),
        log.started('t2', { id: 'now', text: 'instead' }),
        log.delivered({ id: 'now', kind: 'chat' }, 't2'),
        log.accepted('c4', 'fourth'),
        log.stopRequested('stop-1', 't2'),
        log.discarded({ id: 'c3', kind: 'chat', text: 'third' }, 'stop-1'),
        log.discarded({ id: 'c4', kind: 'chat', text: 'fourth' }, 'stop-1'),
        log.promoteRefused('promote-1', 'c3'),
      ];
    };
    const key = 'controls-twice';
    const batch = controls(key);
    expect(await foldEvents(readModels, batch)).toEqual({ applied: batch.length, duplicates: 0 });
    const once = await projections(key);
    expect(await foldEvents(readModels, batch)).toEqual({ applied: 0, duplicates: batch.length });
    expect(await foldEvents(readModels, batch.slice(5, 12))).toEqual({ applied: 0, duplicates: 7 });
    expect(await projections(key)).toEqual(once);
    expect(once.inputs.map((i: { id: string; state: string }) => [i.id, i.state])).toEqual([
      ['a', 'delivered'],
      ['c2', 'retracted'],
      ['c3', 'discarded'],
      ['c4', 'discarded'],
      ['now', 'delivered'],
      ['r0', 'rejected'],
      ['r1', 'rejected'],
    ]);
    expect(await readConversationStatus(readModels, key)).toMatchObject({ steering: [], queue: [], lastInputId: 'c4' });

    const reference = 'controls-one-by-one';
    for (const e of controls(reference)) {
      await foldEvents(readModels, [e]);
      await foldEvents(readModels, [e]);
    }
    expect(await projections(reference)).toEqual(once);
  });

  it('keeps conversations apart even when they use the same input and turn ids', async () => {
    await foldEvents(readModels, [...chatWithToolCall('alice/one'), ...chatWithToolCall('bob/one').slice(0, 2)]);
    expect(await readTurn(readModels, 'alice/one', 't1')).toMatchObject({ status: 'completed' });
    expect(await readTurn(readModels, 'bob/one', 't1')).toMatchObject({ status: 'running', content: '' });
    expect(await readConversationStatus(readModels, 'nobody/here')).toEqual({
      key: 'nobody/here',
      running: null,
      steering: [],
      queue: [],
      lastInputId: null,
      agent: null,
      context: NO_CONTEXT,
      owner: null,
      grants: [],
      todos: [],
      awaiting: [],
      heldUntil: null,
      schedules: [],
      position: 0,
    });
  });
});
