import type { TurnView } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import { TURN_COLUMNS, toTurnView, type TurnRecord } from './turn-view';

/**
 * The turn that answered an input (its prompt) or took it (one of its steered messages),
 * or null when none has yet. A prompt wins over a take; the first turn wins over later ones.
 */
export async function readTurnOfInput(pool: Pool, key: string, input: string): Promise<TurnView | null> {
  const { rows } = await pool.query<TurnRecord>(
    `SELECT ${TURN_COLUMNS} FROM companion.turns
      WHERE conversation = $1 AND (prompt_id = $2 OR steered @> jsonb_build_array(jsonb_build_object('id', $2::text)))
      ORDER BY (prompt_id = $2) DESC, started_at
      LIMIT 1`,
    [key, input],
  );
  return rows.length > 0 ? toTurnView(rows[0]) : null;
}
