import type { ConversationEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import type { StreamRules } from './writes';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

/** A conversation's events after `afterPosition`, in order. */
export async function readConversation(pool: Pool, conversation: string, afterPosition = 0): Promise<ConversationEvent[]> {
  const { rows } = await pool.query<EventRow>({
    name: 'event-store-read-conversation',
    text: `SELECT ${EVENT_COLUMNS} FROM event_store.events WHERE conversation = $1 AND position > $2 ORDER BY position`,
    values: [conversation, afterPosition],
  });
  return rows.map(toConversationEvent);
}

/**
 * At most `limit` of a conversation's events after `after` and at most at `through`, in order:
 * a page of a log read a page at a time, by a reader that may stop before its end.
 */
export async function readConversationPage(pool: Pool, conversation: string, page: { after: number; through: number; limit: number }): Promise<ConversationEvent[]> {
  const { rows } = await pool.query<EventRow>({
    name: 'event-store-read-conversation-page',
    text: `SELECT ${EVENT_COLUMNS} FROM event_store.events WHERE conversation = $1 AND position > $2 AND position <= $3 ORDER BY position LIMIT $4`,
    values: [conversation, page.after, page.through, page.limit],
  });
  return rows.map(toConversationEvent);
}

/**
 * Conversations of these partitions with work left (as the stream's rules said of their state
 * at their last write), read when partitions are assigned, to resume them.
 */
export async function conversationsWithOpenWork(pool: Pool, partitions: readonly number[]): Promise<{ conversation: string; partition: number }[]> {
  if (partitions.length === 0) return [];
  const { rows } = await pool.query<{ conversation: string; partition: number }>(
    `SELECT key AS conversation, partition
       FROM event_store.conversations
      WHERE partition = ANY($1::int[])
        AND open_work`,
    [partitions],
  );
  return rows;
}

/**
 * The conversations of these partitions with something due by `now` (their state's `dueAt`: an
 * approval's timeout), at most `limit` of them, earliest first.
 */
export async function conversationsDue(pool: Pool, partitions: readonly number[], now: Date, limit = 1000): Promise<{ conversation: string; partition: number }[]> {
  if (partitions.length === 0) return [];
  const { rows } = await pool.query<{ conversation: string; partition: number }>(
    `SELECT key AS conversation, partition
       FROM event_store.conversations
      WHERE partition = ANY($1::int[])
        AND head->>'dueAt' IS NOT NULL
        AND head->>'dueAt' <= $2
      ORDER BY head->>'dueAt'
      LIMIT $3`,
    [partitions, now.toISOString(), limit],
  );
  return rows;
}

/** When the next thing falls due in these partitions' conversations (their states' earliest `dueAt`); null: nothing. */
export async function nextDue(pool: Pool, partitions: readonly number[]): Promise<Date | null> {
  if (partitions.length === 0) return null;
  const { rows } = await pool.query<{ due: string | null }>(
    `SELECT min(head->>'dueAt') AS due FROM event_store.conversations WHERE partition = ANY($1::int[]) AND head->>'dueAt' IS NOT NULL`,
    [partitions],
  );
  return rows[0]?.due ? new Date(rows[0].due) : null;
}

/** The states of these conversations as their last write left them (conversations never written are absent). */
export async function readStates<S>(pool: Pool, rules: Pick<StreamRules<S>, 'parse'>, conversations: readonly string[]): Promise<Map<string, S>> {
  const { rows } = await pool.query<{ key: string; state: unknown }>(
    'SELECT key, head AS state FROM event_store.conversations WHERE key = ANY($1::text[])',
    [conversations],
  );
  return new Map(rows.map((row) => [row.key, rules.parse(row.state)]));
}

/** A conversation's fold at `position` of its log, as the code of `version` folded it. */
export type Snapshot = { position: number; version: number; fold: unknown };

/**
 * A conversation read from the start: its latest snapshot of `version` (null when there is none
 * of that version) and the events after it, in order, in one statement. A snapshot of another
 * version (older code folded it) is ignored, and the whole log is read.
 */
export async function readConversationFromSnapshot(pool: Pool, conversation: string, version: number): Promise<{ snapshot: Snapshot | null; events: ConversationEvent[] }> {
  const { rows } = await pool.query<EventRow & { snapshot: unknown }>({
    name: 'event-store-read-from-snapshot',
    text: `WITH snapshot AS (SELECT position, fold FROM event_store.snapshots WHERE conversation = $1 AND version = $2)
     SELECT position, NULL AS id, NULL AS conversation, NULL AS type, NULL AS data, NULL AS at, NULL AS trace, fold AS snapshot FROM snapshot
     UNION ALL
     SELECT ${EVENT_COLUMNS}, NULL FROM event_store.events
      WHERE conversation = $1 AND position > coalesce((SELECT position FROM snapshot), 0)
     ORDER BY position`,
    values: [conversation, version],
  });
  const first = rows[0];
  const snapshot = first && first.id === null ? { position: Number(first.position), version, fold: first.snapshot } : null;
  return { snapshot, events: (snapshot ? rows.slice(1) : rows).map(toConversationEvent) };
}

/**
 * Stores `fold` as the conversation's snapshot at `position`, unless one at a later position is
 * stored already. A snapshot is a cache of the log (any fold of committed events is true), so it
 * is written outside the conversation's transactions, and no fencing is needed.
 */
export async function storeSnapshot(pool: Pool, conversation: string, snapshot: Snapshot): Promise<void> {
  await pool.query(
    `INSERT INTO event_store.snapshots (conversation, position, version, fold) VALUES ($1, $2, $3, $4)
     ON CONFLICT (conversation) DO UPDATE SET position = EXCLUDED.position, version = EXCLUDED.version, fold = EXCLUDED.fold, taken_at = now()
      WHERE event_store.snapshots.position < EXCLUDED.position OR event_store.snapshots.version <> EXCLUDED.version`,
    [conversation, snapshot.position, snapshot.version, JSON.stringify(snapshot.fold)],
  );
}
