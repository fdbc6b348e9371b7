import type { CompanionStatus } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';

/** Status as the gateway serves it, plus the owner and grants it authorizes by (`CompanionStatus` in contracts). */
export type CompanionConversationStatus = CompanionStatus;

/**
 * A conversation's status. An unknown conversation is an idle, empty one.
 *
 * Of the pending inputs (accepted, and not yet delivered, retracted or discarded; a rejected
 * input never was pending), in acceptance order, except that chats which interrupted or rolled
 * back the running turn come first (they run next; the latest such chat first):
 * - `steering`: the steers still waiting for the running turn: those the worker has not decided
 *   on yet, and those it landed on the turn that is running now.
 * - `queue`: every other one: chats, steers answered as turns of their own (landed false), and
 *   landed steers whose turn ended without taking them (stopped, failed): the worker answers
 *   those as turns of their own, so they sit in the queue at the place they were accepted.
 * A decision on a chat (a promoted follow-up) makes it a steer here too.
 */
export async function readConversationStatus(pool: Pool, key: string): Promise<CompanionConversationStatus> {
  const { rows } = await pool.query<{
    owner: string | null;
    agent: string | null;
    grants: Record<string, 'read' | 'write'> | null;
    last_input_id: string | null;
    running_turn: string | null;
    running_started_at: Date | null;
    pending: { id: string; kind: 'chat' | 'steer'; text: string; steering: boolean }[];
  }>(
    `SELECT c.owner, c.agent, c.grants, c.last_input_id, c.running_turn, c.running_started_at,
            (SELECT coalesce(json_agg(json_build_object(
                      'id', i.id,
                      'kind', CASE WHEN i.steer_landed IS NOT NULL THEN 'steer' ELSE i.kind END,
                      'text', i.text,
                      'steering', coalesce((i.kind = 'steer' AND i.steer_landed IS NULL)
                                           OR (i.steer_landed AND i.steer_turn = c.running_turn), false))
                    ORDER BY i.runs_next DESC NULLS LAST, i.position), '[]')
               FROM companion.inputs i WHERE i.conversation = $1 AND i.state = 'pending') AS pending
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
    steering: row.pending.filter((i) => i.steering).map(({ id, text }) => ({ id, text })),
    queue: row.pending.filter((i) => !i.steering).map(({ id, kind, text }) => ({ id, kind, text })),
    lastInputId: row.last_input_id,
    agent: row.agent,
    owner: row.owner,
    grants: Object.entries(row.grants ?? {}).map(([subject, access]) => ({ subject, access })),
  };
}
