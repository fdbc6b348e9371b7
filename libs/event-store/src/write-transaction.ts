import type { DomainEvent } from '@rudder/contracts';
import { isSessionLost, type Pool, type PoolClient } from '@rudder/runtime';
import { ANNOUNCED_JOIN, announcedCte } from './announce';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';
import { writeColumns } from './write-columns';
import { alreadyStored, type StreamRules } from './writes';

/**
 * The transaction write path, shared by `appendToConversation` and `appendToConversations` when
 * the one statement cannot be used: the transaction (its idle timeout, its rollback, a used
 * once key as `AlreadyStoredError`) and the statement that inserts the events in it.
 */

/**
 * How long a write's transaction may sit idle between its statements before PostgreSQL ends
 * the session (SQLSTATE 25P03). A write's statements follow each other at once (`decide` is
 * synchronous), so only a paused or cut-off writer — a zombie — gets there: it holds the share
 * lock on its partition's owner row, and the successor's epoch update must not wait on it for
 * longer than this. The zombie's commit then fails; it wrote nothing.
 */
export const WRITE_IDLE_TIMEOUT_MS = 5000;

export async function inTransaction<T>(pool: Pool, conversation: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
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
    throw alreadyStored(error, conversation);
  } finally {
    client.off('error', ignore);
    client.release(broken);
  }
}

const ignore = () => undefined;

/**
 * Inserts the events in order and updates each conversation's state by them, in one
 * statement; with `earlier`, the same statement reads that conversation's events after a
 * position (the inserts are not visible to it: exactly what was there before).
 */
export async function writeEvents<S>(
  client: PoolClient,
  rules: StreamRules<S>,
  writes: { conversation: string; state: S; events: DomainEvent[] }[],
  trace: string | null,
  earlier?: { conversation: string; after: number },
  /** A channel the stored events are announced on as the transaction commits (`announcedCte`); null: none. */
  announce: string | null = null,
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
     ), ${announcedCte(12)}
     SELECT i.*, false AS earlier FROM inserted i ${ANNOUNCED_JOIN}
     UNION ALL
     SELECT ${EVENT_COLUMNS}, true AS earlier FROM event_store.events WHERE conversation = $9 AND position > $10`,
    values: [
      ...columns.events,
      ...columns.heads,
      earlier?.conversation ?? null,
      earlier?.after ?? Number.MAX_SAFE_INTEGER,
      // The writer's trace, if it runs in one (a turn's span); null when tracing is off.
      trace,
      announce,
    ],
  });
  const inOrder = rows.sort((a, b) => Number(a.position) - Number(b.position));
  return {
    stored: inOrder.filter((r) => !r.earlier).map(toConversationEvent),
    earlier: inOrder.filter((r) => r.earlier).map(toConversationEvent),
  };
}
