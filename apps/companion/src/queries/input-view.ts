import type { Pool } from '@rudder/runtime';
import type { InputState, RejectionCode } from '../projection/evolve';

/**
 * An input as the gateway checks idempotency against it (same id and text: the same input),
 * accepted or rejected. `steer` is the worker's decision on a steer (`steer.accepted`), so a
 * repeated steer id is answered with the same `{id, turn, landed}`; null for a chat and for a
 * steer not yet decided. `state` says where it stands; `rejection` why it was refused (null
 * unless `state` is `rejected`). A rejected input has no `messages` (the refusal names only
 * its joined `text`, so a retry is compared by text) and its `subject` is null.
 */
export type InputView = {
  id: string;
  kind: 'chat' | 'steer';
  text: string;
  messages?: string[];
  subject: string | null;
  /** `state === 'delivered'`. */
  delivered: boolean;
  steer: { turn: string | null; landed: boolean } | null;
  state: InputState;
  rejection: { code: RejectionCode; message: string } | null;
};

export async function readInput(pool: Pool, key: string, id: string): Promise<InputView | null> {
  const { rows } = await pool.query<{
    id: string;
    kind: 'chat' | 'steer';
    text: string;
    messages: string[] | null;
    subject: string | null;
    state: InputState;
    rejection_code: RejectionCode | null;
    rejection_message: string | null;
    steer_turn: string | null;
    steer_landed: boolean | null;
  }>(
    `SELECT id, kind, text, messages, subject, state, rejection_code, rejection_message, steer_turn, steer_landed
       FROM companion.inputs WHERE conversation = $1 AND id = $2`,
    [key, id],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    kind: row.kind,
    text: row.text,
    ...(row.messages === null ? {} : { messages: row.messages }),
    subject: row.subject,
    delivered: row.state === 'delivered',
    steer: row.steer_landed === null ? null : { turn: row.steer_turn, landed: row.steer_landed },
    state: row.state,
    rejection:
      row.rejection_code === null ? null : { code: row.rejection_code, message: row.rejection_message ?? '' },
  };
}
