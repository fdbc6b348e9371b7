import type { TurnView } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Turns, type TurnRow } from '../read-models/entities';

/** One turn of a conversation, or null when the conversation has no turn of that id. */
export async function readTurn(readModels: DataSource, key: string, turn: string): Promise<TurnView | null> {
  const row = await readModels.manager.findOneBy(Turns, { conversation: key, id: turn });
  return row ? toTurnView(row) : null;
}

export const toTurnView = (r: TurnRow): TurnView => ({
  id: r.id,
  prompt: { id: r.promptId, text: r.promptText },
  status: r.status,
  outcome: r.outcome,
  steered: r.steered,
  content: r.content,
  agent: r.agent,
  usage: r.usage,
  woundDown: r.woundDown,
  startedAt: r.startedAt,
  endedAt: r.endedAt,
});
