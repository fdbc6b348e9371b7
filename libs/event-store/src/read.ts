import type { ConversationEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import type { StreamRules } from './append';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

/** A conversation's events after `afterPosition`, in order. */
export async function readConversation(pool: Pool, conversation: string, afterPosition = 0): Promise<ConversationEvent[]> {
  const { rows } = await pool.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM event_store.events WHERE conversation = $1 AND position > $2 ORDER BY position`,
    [conversation, afterPosition],
  );
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

/** The states of these conversations as their last write left them (conversations never written are absent). */
export async function readStates<S>(pool: Pool, rules: Pick<StreamRules<S>, 'parse'>, conversations: readonly string[]): Promise<Map<string, S>> {
  const { rows } = await pool.query<{ key: string; state: unknown }>(
    'SELECT key, head AS state FROM event_store.conversations WHERE key = ANY($1::text[])',
    [conversations],
  );
  return new Map(rows.map((row) => [row.key, rules.parse(row.state)]));
}
