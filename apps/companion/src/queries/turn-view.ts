import type { TurnView } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';

/** One turn of a conversation, or null when the conversation has no turn of that id. */
export async function readTurn(pool: Pool, key: string, turn: string): Promise<TurnView | null> {
  const { rows } = await pool.query<TurnRecord>(
    `SELECT ${TURN_COLUMNS} FROM companion.turns WHERE conversation = $1 AND id = $2`,
    [key, turn],
  );
  return rows.length > 0 ? toTurnView(rows[0]) : null;
}

export const TURN_COLUMNS = 'id, prompt_id, prompt_text, status, outcome, content, steered, agent, usage, started_at, ended_at';

export type TurnRecord = {
  id: string;
  prompt_id: string;
  prompt_text: string;
  status: TurnView['status'];
  outcome: string | null;
  content: string;
  steered: { id: string; text: string }[];
  agent: string | null;
  usage: TurnView['usage'];
  started_at: Date;
  ended_at: Date | null;
};

export const toTurnView = (r: TurnRecord): TurnView => ({
  id: r.id,
  prompt: { id: r.prompt_id, text: r.prompt_text },
  status: r.status,
  outcome: r.outcome,
  steered: r.steered,
  content: r.content,
  agent: r.agent,
  usage: r.usage,
  startedAt: r.started_at.toISOString(),
  endedAt: r.ended_at === null ? null : r.ended_at.toISOString(),
});
