import type { Pool } from '@rudder/runtime';

/**
 * An accepted input as the gateway checks idempotency against it (same id and text: the same
 * input). `steer` is the worker's decision on a steer (`steer.accepted`), so a repeated steer id
 * is answered with the same `{id, turn, landed}`; null for a chat and for a steer not yet decided.
 */
export type InputView = {
  id: string;
  kind: 'chat' | 'steer';
  text: string;
  messages: string[];
  subject: string;
  delivered: boolean;
  steer: { turn: string | null; landed: boolean } | null;
};

export async function readInput(pool: Pool, key: string, id: string): Promise<InputView | null> {
  const { rows } = await pool.query<InputView>(
    `SELECT id, kind, text, messages, subject, delivered,
            CASE WHEN steer_landed IS NULL THEN NULL
                 ELSE json_build_object('turn', steer_turn, 'landed', steer_landed) END AS steer
       FROM companion.inputs WHERE conversation = $1 AND id = $2`,
    [key, id],
  );
  return rows[0] ?? null;
}
