import type { ConversationStatus } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';

/** Status as the gateway serves it, plus the owner it authorizes by (null until an input is accepted). */
export type CompanionConversationStatus = ConversationStatus & { owner: string | null };

/**
 * A conversation's status. An unknown conversation is an idle, empty one.
 * `queue` is the pending (undelivered) inputs in order; `steering` stays empty until the event
 * log says which steers wait for the running turn.
 */
export async function readConversationStatus(pool: Pool, key: string): Promise<CompanionConversationStatus> {
  const { rows } = await pool.query<{
    owner: string | null;
    last_input_id: string | null;
    running_turn: string | null;
    running_started_at: Date | null;
    queue: { id: string; kind: 'chat' | 'steer'; text: string }[];
  }>(
    `SELECT c.owner, c.last_input_id, c.running_turn, c.running_started_at,
            (SELECT coalesce(json_agg(json_build_object('id', i.id, 'kind', i.kind, 'text', i.text) ORDER BY i.position), '[]')
               FROM companion.inputs i WHERE i.conversation = $1 AND NOT i.delivered) AS queue
       FROM (SELECT $1::text AS key) AS k
       LEFT JOIN companion.conversations c ON c.key = k.key`,
    [key],
  );
  const row = rows[0];
  return {
    key,
    running:
      row.running_turn !== null && row.running_started_at !== null
        ? { turn: row.running_turn, startedAt: row.running_started_at.toISOString() }
        : null,
    steering: [],
    queue: row.queue,
    lastInputId: row.last_input_id,
    owner: row.owner,
  };
}
