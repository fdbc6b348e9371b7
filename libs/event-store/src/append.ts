import { randomUUID } from 'node:crypto';
import { storableJson, type ConversationEvent, type DomainEvent } from '@rudder/contracts';
import { grouped, isSessionLost, traceparent, type Pool, type PoolClient } from '@rudder/runtime';
import { FencedError, type Epochs } from './fencing';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

/** An event's once key was already used: what it records is stored already (a retry, or another owner). */
export class AlreadyStoredError extends Error {
  readonly code = 'already_stored';
  constructor(readonly conversation: string, detail: string) {
    super(`already stored in ${conversation}: ${detail}`);
  }
}

/**
 * What the store needs to know of a stream's rules, and no more: the state kept on each
 * conversation's row (parsed from its jsonb, evolved by each event appended), each event's
 * once key, and whether a state has work left (a worker taking the partition resumes those).
 */
export type StreamRules<S> = {
  parse(stored: unknown): S;
  evolve(state: S, event: DomainEvent): S;
  onceKey(event: DomainEvent): string;
  hasOpenWork(state: S): boolean;
};

type StateRow = { key: string; state: unknown };

/**
 * The one order in which every write of several conversations locks their rows, and the outbox
 * relay its watermarks' rows: their keys' UTF-8 bytes, which is what `COLLATE "C"` compares in
 * the database. Not the column's collation (an ICU or libc locale orders `a` before `B`, bytes
 * the other way round), nor JavaScript's default order (UTF-16 code units, which put a
 * character above U+FFFF before U+E000–U+FFFF): two writers locking the same rows in two orders
 * can deadlock (#31 item 5). Every statement that locks several conversations sorts them
 * `COLLATE "C"`; an array handed to one is sorted by this.
 */
export const byKeyBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/**
 * What a write stored, as the outbox relay needs it to publish the write without reading it
 * back: `stored`, each written conversation's last position `before` them (0: none) — every
 * event of it up to there was committed before, and none lies between — and the traceparent
 * stored with them (null without).
 */
export type Written = { stored: ConversationEvent[]; before: Map<string, number>; trace: string | null };

/** What a writer holds of a conversation: its state as of its last event, at `position`. */
export type Seen<S> = { position: number; state?: S };

/**
 * Appends what `decide` makes of the conversation's state, all or none, once the writer is
 * checked to hold `epochs` for the conversation's partition (FencedError otherwise). Throws
 * AlreadyStoredError when a once key was used before: nothing is written and the caller
 * reloads what is stored.
 *
 * Every write of a conversation holds its row lock: that orders its writes (its event
 * positions grow in commit order) and serializes decisions with each other — a steer's
 * landing with the turn's close. Two ways to it, with one outcome:
 *
 * - **One statement**, when the writer holds the state as of the conversation's last event
 *   (`seen.state` at `seen.position`): `decide` runs on that state first, and the statement
 *   writes its events only if, under the row lock, the conversation's last event is still at
 *   `seen.position` and the epoch still holds. No transaction of its own, one round trip: the
 *   turn's steps, when nothing arrived during them. (`decide` deciding nothing on that state
 *   takes the transaction, which decides on the stored one.)
 * - **A transaction** otherwise (or when that statement wrote nothing): lock the row and check
 *   the epoch, decide on the state stored there, write, commit.
 *
 * `earlier` are the conversation's events after `seen.position` that were in the log before
 * this write (others' writes the caller has not read yet), so a caller folding the log can
 * apply them, then `stored`, in log order, without another round trip.
 *
 * `writeUnchanged` makes the one statement: by default a statement of its own; a writer of
 * many conversations at once passes `groupedWrites`, which shares it with theirs.
 */
export async function appendToConversation<S>(
  pool: Pool,
  rules: StreamRules<S>,
  conversation: string,
  epochs: Epochs,
  decide: (state: S) => DomainEvent[],
  seen: Seen<S> = { position: Number.MAX_SAFE_INTEGER },
  writeUnchanged: UnchangedWriter<S> = singleWrites(pool, rules),
): Promise<Written & { earlier: ConversationEvent[] }> {
  const trace = traceparent();
  const events = seen.state === undefined ? [] : decide(seen.state);
  if (events.length > 0) {
    const stored = await writeUnchanged({ conversation, position: seen.position, state: seen.state as S, events, trace }, epochs);
    // The guard wrote only with the conversation's last event at `seen.position`.
    if (stored) return { stored, earlier: [], before: new Map([[conversation, seen.position]]), trace };
  }
  return inTransaction(pool, conversation, async (client) => {
    const { rows } = await client.query<StateRow & { epoch: string; partition: number; last_position: string }>({
      name: 'event-store-lock-conversation',
      text: `SELECT c.key, c.head AS state, c.partition, p.epoch, c.last_position
         FROM event_store.conversations c
         JOIN event_store.partition_owners p ON p.partition = c.partition
        WHERE c.key = $1
          FOR UPDATE OF c FOR SHARE OF p`,
      values: [conversation],
    });
    // No row: an unknown conversation, or a partition nobody owns yet — either way not ours.
    if (rows.length === 0) throw new FencedError(null, `${conversation} has no owned partition`);
    const [row] = rows;
    if (Number(row.epoch) !== epochs.get(row.partition)) {
      throw new FencedError(row.partition, `partition ${row.partition} is at epoch ${row.epoch}, this writer holds ${epochs.get(row.partition) ?? 'none'}`);
    }
    const state = rules.parse(row.state);
    const written = await writeEvents(client, rules, [{ conversation, state, events: decide(state) }], trace, { conversation, after: seen.position });
    return { ...written, before: new Map([[conversation, Number(row.last_position)]]), trace };
  });
}

/**
 * One conversation's part of a one-statement write: `events` decided on `state`, its state as
 * of its last event at `position`, stored with `trace` (the writer's traceparent, null without).
 */
export type UnchangedWrite<S> = { conversation: string; position: number; state: S; events: DomainEvent[]; trace: string | null };

/**
 * How `appendToConversation` makes its one-statement write: answers what it stored, or null
 * when it wrote nothing (the caller then decides again in a transaction, on what is stored).
 */
export type UnchangedWriter<S> = (write: UnchangedWrite<S>, epochs: Epochs) => Promise<ConversationEvent[] | null>;

/** Each write in a statement of its own. */
export const singleWrites =
  <S>(pool: Pool, rules: StreamRules<S>): UnchangedWriter<S> =>
  (write, epochs) =>
    appendIfUnchanged(pool, rules, [write], epochs);

/**
 * At most this many writes share a statement (`groupedWrites`). One conversation that moved
 * sends all of a statement's writes to statements of their own, so a statement of thousands
 * would cost a worker holding thousands of busy conversations a storm of them.
 */
export const WRITES_PER_STATEMENT = 32;

/**
 * Group commit of one-statement writes (a worker's turns' steps, #13): the writes handed over
 * while a statement is in flight go together into the next one, one statement and one commit
 * for all of them (`grouped`: the first after a quiet spell waits one turn of the event loop,
 * no timer). That statement writes all or nothing: when any one conversation is not where its
 * writer saw it, its epoch moved, or it is not on an owned partition, nothing is written and
 * each write goes again in a statement of its own, which answers for it alone (its events, null
 * or its error). Only writes of different conversations under the same epochs (the worker's
 * map of the moment; a rebalance replaces it) share a statement, `WRITES_PER_STATEMENT` at most.
 */
export function groupedWrites<S>(pool: Pool, rules: StreamRules<S>): UnchangedWriter<S> {
  type Item = { write: UnchangedWrite<S>; epochs: Epochs };
  type Outcome = { stored: ConversationEvent[] | null } | { error: unknown };
  const alone = ({ write, epochs }: Item): Promise<Outcome> =>
    appendIfUnchanged(pool, rules, [write], epochs).then(
      (stored) => ({ stored }),
      (error: unknown) => ({ error }),
    );
  const write = grouped<Item, Outcome>(async (items) => {
    const [first] = items;
    const distinct = new Set(items.map((i) => i.write.conversation)).size === items.length;
    if (items.length > 1 && distinct && items.every((i) => i.epochs === first.epochs)) {
      const stored = await appendIfUnchanged(
        pool,
        rules,
        items.map((i) => i.write),
        first.epochs,
      ).catch(() => null); // each write alone says what was wrong with it
      if (stored) return items.map((i) => ({ stored: stored.filter((e) => e.conversation === i.write.conversation) }));
    }
    if (distinct) return Promise.all(items.map(alone));
    // Two writes of one conversation: the second follows the first.
    const outcomes: Outcome[] = [];
    for (const item of items) outcomes.push(await alone(item));
    return outcomes;
  }, { most: WRITES_PER_STATEMENT, size: () => 1 });
  return async (unchanged, epochs) => {
    const outcome = await write({ write: unchanged, epochs });
    if ('error' in outcome) throw outcome.error;
    return outcome.stored;
  };
}

/**
 * The one-statement write, of one conversation or several: each one's `events` decided on its
 * state as of its last event at `position`. The guard locks the conversations' rows (in key
 * order, as every write of several does) and shares their partitions' owner rows, as the
 * transaction does; under READ COMMITTED a row that changed while the statement waited for its
 * lock is checked again as it is now, so a write committed meanwhile (an ingested steer, a
 * step) moves `last_position` and the guard comes back short. It writes all or nothing: only
 * when every conversation is where its writer saw it, the epoch still holds, each is on
 * `partition` (when given: an ingested batch writes only its own partition's conversations)
 * and none of the `probe` once keys is stored (an input handled before). Otherwise nothing is
 * written and this answers null: the caller decides again in a transaction, on what is stored.
 * A probe key stored by a write committed after this statement began was committed by a writer
 * that moved `last_position` too, which the guard sees.
 *
 * Its plan is cached and generic after a few runs, made for arrays of unknown length, so every
 * part of it finds its rows by a key whatever the tables hold: each probe key is one lookup in
 * the `(conversation, once_key)` index (a correlated subquery, `OFFSET 0` so it is not turned
 * into a join, which a generic plan made a hash of `event_store.events` read whole: 1.95 ms a
 * statement at 30,000 events, against 0.47), and the heads are updated by `key = ANY`, not by a
 * join with the array.
 */
async function appendIfUnchanged<S>(
  pool: Pool,
  rules: StreamRules<S>,
  writes: readonly UnchangedWrite<S>[],
  epochs: Epochs,
  { partition = null, probe = [] }: { partition?: number | null; probe?: readonly { conversation: string; onceKey: string }[] } = {},
): Promise<ConversationEvent[] | null> {
  const columns = writeColumns(rules, writes);
  try {
    const { rows } = await pool.query<EventRow>({
      name: 'event-store-append-if-unchanged',
      text: `WITH guard AS (
         SELECT c.key
           FROM event_store.conversations c
           JOIN event_store.partition_owners p ON p.partition = c.partition
          WHERE c.key = ANY($1::text[]) AND c.last_position = ($2::bigint[])[array_position($1::text[], c.key)]
            AND ($3::int IS NULL OR c.partition = $3)
            AND (p.partition, p.epoch) IN (SELECT * FROM unnest($4::int[], $5::bigint[]))
          ORDER BY c.key COLLATE "C"
            FOR UPDATE OF c FOR SHARE OF p
       ), go AS (
         SELECT (SELECT count(*) FROM guard) = cardinality($1::text[])
            AND NOT EXISTS (SELECT 1 FROM unnest($6::text[], $7::text[]) AS k (conversation, once_key)
                             WHERE EXISTS (SELECT 1 FROM event_store.events e
                                            WHERE e.conversation = k.conversation AND e.once_key = k.once_key OFFSET 0)) AS ok
       ), inserted AS (
         INSERT INTO event_store.events (id, conversation, type, data, once_key, trace, at)
         SELECT e.id, e.conversation, e.type, e.data, e.once_key, e.trace, statement_timestamp()
           FROM unnest($8::uuid[], $9::text[], $10::text[], $11::jsonb[], $12::text[], $16::text[]) WITH ORDINALITY AS e(id, conversation, type, data, once_key, trace, n)
          WHERE (SELECT ok FROM go)
          ORDER BY e.n
         RETURNING ${EVENT_COLUMNS}
       ), heads AS (
         UPDATE event_store.conversations c
            SET head = ($14::jsonb[])[array_position($13::text[], c.key)],
                open_work = ($15::boolean[])[array_position($13::text[], c.key)],
                last_position = (SELECT max(i.position) FROM inserted i WHERE i.conversation = c.key)
          WHERE c.key = ANY($13::text[]) AND (SELECT ok FROM go)
       )
       SELECT * FROM inserted ORDER BY position`,
      values: [
        writes.map((w) => w.conversation),
        writes.map((w) => w.position),
        partition,
        [...epochs.keys()],
        [...epochs.values()],
        probe.map((k) => k.conversation),
        probe.map((k) => k.onceKey),
        ...columns.events,
        ...columns.heads,
        columns.traces,
      ],
    });
    return rows.length === 0 ? null : rows.map(toConversationEvent);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AlreadyStoredError(writes.map((w) => w.conversation).join(', '), String((error as { detail?: string }).detail ?? ''));
    throw error;
  }
}

/**
 * Appends to several conversations of one partition in one transaction (an ingested batch),
 * creating them on first sight, once the writer's epoch for the partition is checked. `decide`
 * sees each state and which of the `probe` once keys are stored already (the same input
 * delivered again); locks are taken in one order so batches never deadlock.
 *
 * A conversation stays on the partition where it was first seen, for good: one owner writes
 * it. A conversation already stored on another partition is not written here (its owner is
 * whoever holds that partition, and this writer's epoch says nothing about it); it is returned
 * in `elsewhere` with its partition, for the caller to send its records there (#9 hole 10).
 *
 * `before` gives, for each conversation written here, the position of its last event before
 * this write (0: none), so a caller that holds a conversation as of exactly that position can
 * fold the stored events without reading the log again.
 *
 * With `seen` giving the state the writer holds of every conversation of the batch (as of its
 * last event), the write is one statement: `decide` runs on those states with nothing stored,
 * and the statement writes only if every conversation is still there, on this partition, and
 * none of the `probe` keys is stored (`appendIfUnchanged`). Otherwise — a conversation not
 * held, the log moved, an input handled before — the transaction decides on what is stored.
 */
export async function appendToConversations<S>(
  pool: Pool,
  rules: StreamRules<S>,
  partition: number,
  epochs: Epochs,
  requests: readonly { conversation: string; probe: readonly string[] }[],
  decide: (conversation: string, state: S, stored: ReadonlySet<string>) => DomainEvent[],
  seen: (conversation: string) => Seen<S> | undefined = () => undefined,
): Promise<Written & { elsewhere: Map<string, number> }> {
  const trace = traceparent();
  if (requests.length === 0) return { stored: [], elsewhere: new Map(), before: new Map(), trace };
  const sorted = [...requests].sort((a, b) => byKeyBytes(a.conversation, b.conversation));
  const held = sorted.map((r) => ({ conversation: r.conversation, seen: seen(r.conversation) }));
  if (held.every((h) => h.seen?.state !== undefined)) {
    const writes = held.map(({ conversation, seen }) => {
      const state = seen!.state as S;
      return { conversation, position: seen!.position, state, events: decide(conversation, state, new Set()), trace };
    });
    const probe = sorted.flatMap((r) => r.probe.map((onceKey) => ({ conversation: r.conversation, onceKey })));
    const stored = writes.some((w) => w.events.length > 0)
      ? await appendIfUnchanged(pool, rules, writes, epochs, { partition, probe }).catch((error: unknown) => {
          if (error instanceof AlreadyStoredError) return null; // the transaction finds what is stored
          throw error;
        })
      : null;
    if (stored) return { stored, elsewhere: new Map(), before: new Map(writes.map((w) => [w.conversation, w.position])), trace };
  }
  return inTransaction(pool, sorted[0].conversation, async (client) => {
    // The epoch check first (a share lock on the partition's owner row), then the
    // conversations' rows, in one statement: nothing is written when the epoch is not ours.
    // The no-op update keeps the stored partition and locks the row, as a write does, in the
    // one lock order (`byKeyBytes`); two batches creating one conversation on two partitions
    // serialize on its key, the second finds it on the first one's partition.
    const rows = await client.query<StateRow & { partition: number; last_position: string }>({
      name: 'event-store-lock-conversations',
      text: `WITH owner AS (SELECT epoch FROM event_store.partition_owners WHERE partition = $2 FOR SHARE)
       INSERT INTO event_store.conversations (key, partition)
       SELECT k, $2 FROM unnest($1::text[]) AS k WHERE EXISTS (SELECT 1 FROM owner WHERE epoch = $3)
        ORDER BY k COLLATE "C"
       ON CONFLICT (key) DO UPDATE SET partition = event_store.conversations.partition
       RETURNING key, head AS state, partition, last_position`,
      values: [sorted.map((r) => r.conversation), partition, epochs.get(partition) ?? -1],
    });
    if (rows.rows.length === 0) {
      const owner = await client.query<{ epoch: string }>('SELECT epoch FROM event_store.partition_owners WHERE partition = $1', [partition]);
      throw new FencedError(partition, `partition ${partition} is at epoch ${owner.rows[0]?.epoch ?? 'none'}, this writer holds ${epochs.get(partition) ?? 'none'}`);
    }
    const elsewhere = new Map(rows.rows.filter((row) => row.partition !== partition).map((row) => [row.key, row.partition]));
    const states = { rows: rows.rows.filter((row) => !elsewhere.has(row.key)) };
    const here = sorted.filter((r) => !elsewhere.has(r.conversation));
    const probed = await client.query<{ conversation: string; once_key: string }>({
      name: 'event-store-probe-once-keys',
      text: `SELECT conversation, once_key FROM event_store.events
        WHERE (conversation, once_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      values: [here.flatMap((r) => r.probe.map(() => r.conversation)), here.flatMap((r) => r.probe)],
    });
    const stateOf = new Map(states.rows.map((row) => [row.key, rules.parse(row.state)]));
    const storedOf = (conversation: string) =>
      new Set(probed.rows.filter((row) => row.conversation === conversation).map((row) => row.once_key));
    const { stored } = await writeEvents(
      client,
      rules,
      here.map(({ conversation }) => {
        const state = stateOf.get(conversation)!;
        return { conversation, state, events: decide(conversation, state, storedOf(conversation)) };
      }),
      trace,
    );
    const before = new Map(states.rows.map((row) => [row.key, Number(row.last_position)]));
    return { stored, elsewhere, before, trace };
  });
}

/**
 * Inserts the events in order and updates each conversation's state by them, in one
 * statement; with `earlier`, the same statement reads that conversation's events after a
 * position (the inserts are not visible to it: exactly what was there before).
 */
async function writeEvents<S>(
  client: PoolClient,
  rules: StreamRules<S>,
  writes: { conversation: string; state: S; events: DomainEvent[] }[],
  trace: string | null,
  earlier?: { conversation: string; after: number },
) {
  if (writes.every((w) => w.events.length === 0)) return { stored: [], earlier: [] };
  const columns = writeColumns(rules, writes);
  // `at` is when this statement starts, after an earlier statement of the transaction took the
  // conversations' locks (statement_timestamp(), not the transaction's start, now()): a
  // transaction that began before the previous writer committed would otherwise stamp its events
  // earlier than events at lower positions of the conversation. One time for the whole write.
  const { rows } = await client.query<EventRow & { earlier: boolean }>({
    name: 'event-store-write-events',
    text: `WITH inserted AS (
       INSERT INTO event_store.events (id, conversation, type, data, once_key, trace, at)
       SELECT e.id, e.conversation, e.type, e.data, e.once_key, $11::text, statement_timestamp()
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS e(id, conversation, type, data, once_key, n)
        ORDER BY e.n
       RETURNING ${EVENT_COLUMNS}
     ), states AS (
       UPDATE event_store.conversations c
          SET head = s.state, open_work = s.open, last_position = (SELECT max(i.position) FROM inserted i WHERE i.conversation = s.key)
         FROM unnest($6::text[], $7::jsonb[], $8::boolean[]) AS s(key, state, open)
        WHERE c.key = s.key
     )
     SELECT *, false AS earlier FROM inserted
     UNION ALL
     SELECT ${EVENT_COLUMNS}, true AS earlier FROM event_store.events WHERE conversation = $9 AND position > $10`,
    values: [
      ...columns.events,
      ...columns.heads,
      earlier?.conversation ?? null,
      earlier?.after ?? Number.MAX_SAFE_INTEGER,
      // The writer's trace, if it runs in one (a turn's span); null when tracing is off.
      trace,
    ],
  });
  const inOrder = rows.sort((a, b) => Number(a.position) - Number(b.position));
  return {
    stored: inOrder.filter((r) => !r.earlier).map(toConversationEvent),
    earlier: inOrder.filter((r) => r.earlier).map(toConversationEvent),
  };
}

/**
 * A write's parameters, column by column as its statement unnests them: the events in order
 * (ids, conversations, types, data, once keys), then the new head of each conversation they
 * change (keys, states, whether work is left), and each event's writer's trace (`traces`, for
 * a statement whose writes come from several writers).
 */
function writeColumns<S>(rules: StreamRules<S>, writes: readonly { conversation: string; state: S; events: DomainEvent[]; trace?: string | null }[]) {
  const events = writes.flatMap((w) => w.events.map((event) => ({ conversation: w.conversation, event, trace: w.trace ?? null })));
  const heads = writes
    .filter((w) => w.events.length > 0)
    .map((w) => {
      const state = w.events.reduce(rules.evolve, w.state);
      return { key: w.conversation, state: storableJson(state), open: rules.hasOpenWork(state) };
    });
  return {
    events: [
      events.map(() => randomUUID()),
      events.map((e) => e.conversation),
      events.map((e) => e.event.type),
      events.map((e) => storableJson(e.event.data)),
      events.map((e) => rules.onceKey(e.event)),
    ],
    heads: [heads.map((h) => h.key), heads.map((h) => h.state), heads.map((h) => h.open)],
    /** Each event's writer's trace (null when tracing is off). */
    traces: events.map((e) => e.trace),
  };
}

/**
 * How long a write's transaction may sit idle between its statements before PostgreSQL ends
 * the session (SQLSTATE 25P03). A write's statements follow each other at once (`decide` is
 * synchronous), so only a paused or cut-off writer — a zombie — gets there: it holds the share
 * lock on its partition's owner row, and the successor's epoch update must not wait on it for
 * longer than this. The zombie's commit then fails; it wrote nothing (#9 hole 4).
 */
export const WRITE_IDLE_TIMEOUT_MS = 5000;

async function inTransaction<T>(pool: Pool, conversation: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A session the server ended while no statement ran (the idle timeout) reports it here; the
  // next statement then fails, which is where this write learns it.
  client.on('error', ignore);
  let broken = false;
  try {
    // Set per transaction, so it holds whatever pool the writer was given.
    await client.query(`BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${WRITE_IDLE_TIMEOUT_MS}`);
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    broken = isSessionLost(error);
    await client.query('ROLLBACK').catch(() => undefined);
    if (isUniqueViolation(error)) throw new AlreadyStoredError(conversation, String((error as { detail?: string }).detail ?? ''));
    throw error;
  } finally {
    client.off('error', ignore);
    client.release(broken);
  }
}

const ignore = () => undefined;

const isUniqueViolation = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505';
