import type { ConversationEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import { turnEndedKey, turnForKey } from './once-key';
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
 * Conversations of these partitions with work left: an accepted input that started no turn,
 * or a turn that did not end. Read when partitions are assigned, to resume them.
 * It scans the inputs and turns of those partitions; fine at today's sizes (see docs/architecture.md).
 */
export async function conversationsWithOpenWork(pool: Pool, partitions: readonly number[]): Promise<{ conversation: string; partition: number }[]> {
  if (partitions.length === 0) return [];
  const { rows } = await pool.query<{ conversation: string; partition: number }>(
    `SELECT DISTINCT e.conversation, c.partition
       FROM event_store.events e
       JOIN event_store.conversations c ON c.key = e.conversation
      WHERE c.partition = ANY($1::int[])
        AND ((e.type = 'input.accepted' AND NOT EXISTS (
               SELECT 1 FROM event_store.events t
                WHERE t.conversation = e.conversation AND t.once_key = $2 || (e.data->'input'->>'id')))
          OR (e.type = 'turn.started' AND NOT EXISTS (
               SELECT 1 FROM event_store.events t
                WHERE t.conversation = e.conversation AND t.once_key = $3 || (e.data->>'turn'))))`,
    [partitions, turnForKey(''), turnEndedKey('')],
  );
  return rows;
}
