import type { CompanionInput } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import type { InputState, RejectionCode } from '../projection/evolve';

/** An input as the gateway checks idempotency against it (see `CompanionInput` in contracts). */
export type InputView = CompanionInput;

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
    steer: row.steer_landed === null ? null : { turn: row.steer_turn, landed: row.steer_landed },
    state: row.state,
    rejection:
      row.rejection_code === null ? null : { code: row.rejection_code, message: row.rejection_message ?? '' },
  };
}
