import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, migrate, type Pool } from '@rudder/runtime';
import { migrations, SCHEMA } from '../schema';
import { readConversationStatus } from '../queries/conversation-status';
import { parseCursor, readTranscriptPage, type TranscriptCursor } from '../queries/transcript-page';
import { readTurn } from '../queries/turn-view';
import { readTurnOfInput } from '../queries/turn-of-input';
import { readInput } from '../queries/input-view';
import { readEventsAfter } from '../queries/event-replay';
import { createFreshDatabase } from '../testing/test-database';
import { chatWithToolCall, conversationLog } from '../testing/conversation-log';
import { foldEvents } from './fold-events';

let database: Awaited<ReturnType<typeof createFreshDatabase>>;
let pool: Pool;

beforeAll(async () => {
  database = await createFreshDatabase();
  pool = createPool(database.url);
  await migrate(pool, SCHEMA, migrations);
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

/** Every projection row of a conversation, without the key, in a stable order. */
async function projections(conversation: string) {
  const read = async (sql: string) => (await pool.query(sql, [conversation])).rows;
  return {
    conversations: await read(`SELECT owner, last_input_id, running_turn, running_started_at FROM companion.conversations WHERE key = $1`),
    inputs: await read(`SELECT id, kind, text, messages, subject, accepted_at, position, delivered FROM companion.inputs WHERE conversation = $1 ORDER BY id`),
    turns: await read(`SELECT id, prompt_id, prompt_text, status, outcome, content, steered, started_at, ended_at FROM companion.turns WHERE conversation = $1 ORDER BY id`),
    transcript: await read(`SELECT position, part, id, role, text, turn, steered, at FROM companion.transcript WHERE conversation = $1 ORDER BY position, part`),
    events: await read(`SELECT position, type, data, at FROM companion.events WHERE conversation = $1 ORDER BY position`),
  };
}

const allMessages = async (conversation: string) => (await readTranscriptPage(pool, conversation, { after: null, limit: 200 })).items;

describe('foldEvents', () => {
  it('shows a chat queued when accepted, running once its turn starts, and the conversation idle when the turn ends', async () => {
    const key = 'user-42/trip';
    const [accepted, started, ...rest] = chatWithToolCall(key);
    const ended = rest.pop()!;

    await foldEvents(pool, [accepted]);
    expect(await readConversationStatus(pool, key)).toEqual({
      key,
      running: null,
      steering: [],
      queue: [{ id: 'i1', kind: 'chat', text: 'Plan a trip to Lisbon' }],
      lastInputId: 'i1',
      owner: 'alice',
    });
    expect(await allMessages(key)).toEqual([]);

    await foldEvents(pool, [started, ...rest]);
    expect(await readConversationStatus(pool, key)).toMatchObject({
      running: { turn: 't1', startedAt: started.at },
      queue: [],
      lastInputId: 'i1',
    });
    expect(await readTurn(pool, key, 't1')).toEqual({
      id: 't1',
      prompt: { id: 'i1', text: 'Plan a trip to Lisbon' },
      status: 'running',
      outcome: null,
      steered: [],
      content: 'Let me check the weather.\n\nLisbon is sunny: go in May.',
      startedAt: started.at,
      endedAt: null,
    });

    await foldEvents(pool, [ended]);
    expect(await readConversationStatus(pool, key)).toMatchObject({ running: null, queue: [], lastInputId: 'i1', owner: 'alice' });
    expect(await readTurn(pool, key, 't1')).toMatchObject({
      status: 'completed',
      outcome: null,
      content: 'Let me check the weather.\n\nLisbon is sunny: go in May.',
      endedAt: ended.at,
    });
    expect(await allMessages(key)).toEqual([
      { id: 'i1', role: 'user', text: 'Plan a trip to Lisbon', turn: 't1', steered: false, at: accepted.at },
      { id: 't1/0', role: 'assistant', text: 'Let me check the weather.', turn: 't1', steered: false, at: rest[0].at },
      { id: 't1/1', role: 'assistant', text: 'Lisbon is sunny: go in May.', turn: 't1', steered: false, at: rest[3].at },
    ]);
    expect(await readInput(pool, key, 'i1')).toEqual({
      id: 'i1',
      kind: 'chat',
      text: 'Plan a trip to Lisbon',
      messages: ['Plan a trip to Lisbon'],
      subject: 'alice',
      delivered: true,
    });
    expect((await readEventsAfter(pool, key, { after: null, limit: 500 })).items).toEqual(chatWithToolCall(key));
    expect((await readEventsAfter(pool, key, { after: 5, limit: 500 })).items.map((e) => e.position)).toEqual([6, 7]);
  });

  it('answers follow-ups in order: the second chat waits in the queue while the first turn runs', async () => {
    const key = 'queue-order';
    const log = conversationLog(key);
    await foldEvents(pool, [
      log.accepted('a', 'first', 'bob'),
      log.accepted('b', 'second', 'carol'),
      log.started('t-a', { id: 'a', text: 'first' }),
      log.accepted('c', 'third', 'bob'),
    ]);
    expect(await readConversationStatus(pool, key)).toMatchObject({
      running: { turn: 't-a' },
      queue: [
        { id: 'b', kind: 'chat', text: 'second' },
        { id: 'c', kind: 'chat', text: 'third' },
      ],
      lastInputId: 'c',
      owner: 'bob',
    });
  });

  it('changes nothing when the same batch is folded twice', async () => {
    const key = 'twice';
    const batch = chatWithToolCall(key);
    expect(await foldEvents(pool, batch)).toEqual({ applied: 7, duplicates: 0 });
    const once = await projections(key);
    expect(await foldEvents(pool, batch)).toEqual({ applied: 0, duplicates: 7 });
    expect(await projections(key)).toEqual(once);
    expect(once.transcript).toHaveLength(3);
  });

  it('changes nothing when an event comes again in a later batch', async () => {
    const events = (key: string) => chatWithToolCall(key);
    const clean = events('redelivered-reference');
    for (const e of clean) await foldEvents(pool, [e]);

    const key = 'redelivered';
    const [accepted, started, reply, toolStarted, toolEnded, finalReply, ended] = events(key);
    await foldEvents(pool, [accepted, started, reply]);
    // The relay published the reply twice; Kafka redelivered the start with it.
    expect(await foldEvents(pool, [started, reply, toolStarted])).toEqual({ applied: 1, duplicates: 2 });
    expect(await foldEvents(pool, [toolEnded, reply, finalReply])).toEqual({ applied: 2, duplicates: 1 });
    expect((await readTurn(pool, key, 't1'))?.content).toBe('Let me check the weather.\n\nLisbon is sunny: go in May.');
    await foldEvents(pool, [ended, accepted, finalReply]);

    expect(await projections(key)).toEqual(await projections('redelivered-reference'));
  });

  it('folds an event repeated within one batch once', async () => {
    const key = 'repeated-in-batch';
    const [accepted, started, reply] = chatWithToolCall(key);
    expect(await foldEvents(pool, [accepted, started, reply, reply, started])).toEqual({ applied: 3, duplicates: 2 });
    expect((await readTurn(pool, key, 't1'))?.content).toBe('Let me check the weather.');
  });

  it('folds each event once when two consumers fold overlapping batches at the same time', async () => {
    const key = 'rebalance';
    const batch = chatWithToolCall(key);
    const results = await Promise.all([foldEvents(pool, batch.slice(0, 6)), foldEvents(pool, batch.slice(2))]);
    expect(results.reduce((sum, r) => sum + r.applied, 0)).toBe(7);
    expect(await readTurn(pool, key, 't1')).toMatchObject({ status: 'completed' });
    expect((await allMessages(key)).map((m) => m.id)).toEqual(['i1', 't1/0', 't1/1']);
  });

  it('loses no update when batches of one conversation are folded at the same time', async () => {
    const key = 'concurrent';
    const log = conversationLog(key);
    const accepted = Array.from({ length: 12 }, (_, i) => log.accepted(`c${i + 1}`, `chat ${i + 1}`));
    await Promise.all(accepted.reverse().map((e) => foldEvents(pool, [e])));
    const status = await readConversationStatus(pool, key);
    expect(status.queue.map((q) => q.id)).toEqual(Array.from({ length: 12 }, (_, i) => `c${i + 1}`));
    expect(status.lastInputId).toBe('c12');
  });

  it('pages the transcript oldest first with a cursor until next is null', async () => {
    const key = 'pages';
    const log = conversationLog(key);
    await foldEvents(pool, [
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
      const page = await readTranscriptPage(pool, key, { after, limit: 2 });
      texts.push(...page.items.map((m) => m.text));
      cursors.push(page.next);
      after = page.next === null ? null : parseCursor(page.next);
    } while (after !== null);

    expect(texts).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(cursors).toHaveLength(3);
    expect(cursors[2]).toBeNull();
    expect(await readTranscriptPage(pool, key, { after: parseCursor(cursors[1]!), limit: 2 })).toMatchObject({
      items: [{ text: 'five' }],
      next: null,
    });
  });

  it('enters a chat of several messages as one user row per message, under <input>#<n>', async () => {
    const key = 'several';
    const log = conversationLog(key);
    await foldEvents(pool, [
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
    expect(await readTurnOfInput(pool, key, 'multi')).toMatchObject({ id: 't1', prompt: { id: 'multi' } });
    expect(await readInput(pool, key, 'multi')).toMatchObject({
      text: 'Flights to Lisbon?\n\nAnd hotels?\n\nBudget 800 EUR.',
      messages: ['Flights to Lisbon?', 'And hotels?', 'Budget 800 EUR.'],
      delivered: true,
    });
  });

  it('keeps how a turn ended and the steered messages it took, and finds the turn by a taken input', async () => {
    const key = 'stopped';
    const log = conversationLog(key);
    await foldEvents(pool, [
      log.accepted('s1', 'go'),
      log.started('t1', { id: 's1', text: 'go' }),
      log.replied('t1', 0, 'Going.'),
      log.ended('t1', 'Going.', { status: 'stopped', outcome: 'stopped by alice', steered: [{ id: 'steer-1', text: 'faster' }] }),
    ]);
    expect(await readTurn(pool, key, 't1')).toMatchObject({
      status: 'stopped',
      outcome: 'stopped by alice',
      steered: [{ id: 'steer-1', text: 'faster' }],
    });
    expect(await readTurnOfInput(pool, key, 'steer-1')).toMatchObject({ id: 't1' });
    expect(await readTurnOfInput(pool, key, 'never-sent')).toBeNull();
    expect(await readConversationStatus(pool, key)).toMatchObject({ running: null });
  });

  it('keeps conversations apart even when they use the same input and turn ids', async () => {
    await foldEvents(pool, [...chatWithToolCall('alice/one'), ...chatWithToolCall('bob/one').slice(0, 2)]);
    expect(await readTurn(pool, 'alice/one', 't1')).toMatchObject({ status: 'completed' });
    expect(await readTurn(pool, 'bob/one', 't1')).toMatchObject({ status: 'running', content: '' });
    expect(await readConversationStatus(pool, 'nobody/here')).toEqual({
      key: 'nobody/here',
      running: null,
      steering: [],
      queue: [],
      lastInputId: null,
      owner: null,
    });
  });
});
