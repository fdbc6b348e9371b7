import type { ConversationEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
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
 * Conversations of these partitions with work left — a running turn, or inputs waiting to be
 * turns — read from their heads when partitions are assigned, to resume them.
 */
export async function conversationsWithOpenWork(pool: Pool, partitions: readonly number[]): Promise<{ conversation: string; partition: number }[]> {
  if (partitions.length === 0) return [];
  const { rows } = await pool.query<{ conversation: string; partition: number }>(
    `SELECT key AS conversation, partition
       FROM event_store.conversations
      WHERE partition = ANY($1::int[])
        AND (head->>'runningTurn' IS NOT NULL OR jsonb_array_length(COALESCE(head->'queue', '[]')) > 0)`,
    [partitions],
  );
  return rows;
}
