import type { TurnView } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Turns } from '../read-models/entities';
import { toTurnView, withApprovals } from './turn-view';

/**
 * The turn that answered an input (its prompt) or took it (one of its steered messages),
 * or null when none has yet. A prompt wins over a take; the first turn wins over later ones.
 */
export async function readTurnOfInput(readModels: DataSource, key: string, input: string): Promise<TurnView | null> {
  const row = await withApprovals(readModels.manager.createQueryBuilder(Turns, 't'))
    .where('t.conversation = :key', { key })
    .andWhere("(t.promptId = :input OR t.steered @> jsonb_build_array(jsonb_build_object('id', CAST(:input AS text))))", { input })
    .orderBy('t.promptId = :input', 'DESC')
    .addOrderBy('t.startedAt', 'ASC')
    .getOne();
  return row ? toTurnView(row, row.approvals) : null;
}
