import { randomUUID } from 'node:crypto';
import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import type { Pool, PoolClient } from '@rudder/runtime';
import { onceKey } from './once-key';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

/** An event's once key was already used: what it records is stored already (a retry, or another owner). */
export class AlreadyStoredError extends Error {
  readonly code = 'already_stored';
  constructor(readonly conversation: string, detail: string) {
    super(`already stored in ${conversation}: ${detail}`);
  }
}

export class UnknownConversationError extends Error {
  readonly code = 'unknown_conversation';
  constructor(readonly conversation: string) {
    super(`no conversation ${conversation} in the event log`);
  }
}

/** Inserts events in order; `ON CONFLICT` decides what a repeated once key does. */
async function insertEvents(client: PoolClient, conversation: string, events: readonly DomainEvent[], onConflict: '' | 'ON CONFLICT DO NOTHING') {
  const { rows } = await client.query<EventRow>(
    `INSERT INTO event_store.events (id, conversation, type, data, once_key)
     SELECT e.id, $1, e.type, e.data, e.once_key
       FROM unnest($2::uuid[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS e(id, type, data, once_key, n)
      ORDER BY e.n
     ${onConflict}
     RETURNING ${EVENT_COLUMNS}`,
    [
      conversation,
      events.map(() => randomUUID()),
      events.map((e) => e.type),
      events.map((e) => JSON.stringify(e.data)),
      events.map(onceKey),
    ],
  );
  return rows.sort((a, b) => Number(a.position) - Number(b.position)).map(toConversationEvent);
}

/**
 * Appends events to a conversation in one transaction, all or none. The conversation row is
 * locked first, which orders every write of the conversation (and, with steering, serializes
 * a steer's decision with the turn's close). Throws AlreadyStoredError when any once key was
 * used before: nothing is written and the caller reloads what is stored.
 */
export async function appendToConversation(pool: Pool, conversation: string, events: readonly DomainEvent[]): Promise<ConversationEvent[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const lock = await client.query('SELECT 1 FROM event_store.conversations WHERE key = $1 FOR UPDATE', [conversation]);
    if (lock.rowCount === 0) throw new UnknownConversationError(conversation);
    const stored = await insertEvents(client, conversation, events, '');
    await client.query('COMMIT');
    return stored;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (isUniqueViolation(error)) throw new AlreadyStoredError(conversation, String((error as { detail?: string }).detail ?? ''));
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Appends events of several conversations in one transaction, creating conversations on
 * first sight; an event whose once key is taken is skipped (the same input delivered
 * again). Returns what was newly stored, in order.
 */
export async function appendIfNew(
  pool: Pool,
  batch: ReadonlyMap<string, { partition: number; events: DomainEvent[] }>,
): Promise<ConversationEvent[]> {
  const keys = [...batch.keys()].sort(); // one lock order for every writer: no deadlocks between batches
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO event_store.conversations (key, partition)
       SELECT * FROM unnest($1::text[], $2::int[])
       ON CONFLICT (key) DO UPDATE SET partition = EXCLUDED.partition`,
      [keys, keys.map((k) => batch.get(k)!.partition)],
    );
    const stored: ConversationEvent[] = [];
    for (const key of keys) stored.push(...(await insertEvents(client, key, batch.get(key)!.events, 'ON CONFLICT DO NOTHING')));
    await client.query('COMMIT');
    return stored;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

const isUniqueViolation = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505';
