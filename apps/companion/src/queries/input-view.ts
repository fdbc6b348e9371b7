import type { Pool } from '@rudder/runtime';

/** An accepted input as the gateway checks idempotency against it (same id and text: the same input). */
export type InputView = {
  id: string;
  kind: 'chat' | 'steer';
  text: string;
  messages: string[];
  subject: string;
  delivered: boolean;
};

export async function readInput(pool: Pool, key: string, id: string): Promise<InputView | null> {
  const { rows } = await pool.query<InputView>(
    `SELECT id, kind, text, messages, subject, delivered FROM companion.inputs WHERE conversation = $1 AND id = $2`,
    [key, id],
  );
  return rows[0] ?? null;
}
