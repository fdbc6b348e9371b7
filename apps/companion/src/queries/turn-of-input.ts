import type { TurnView } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Turns } from '../read-models/entities';
import { toTurnView, withApprovals } from './turn-view';

/** How many collapses a lookup follows: a `latest` queue collapses each follow-up into the next, so one per follow-up sent while a turn ran. */
const MAX_COLLAPSES_FOLLOWED = 1000;

/**
 * The turn that answered an input (its prompt) or took it (one of its steered messages),
 * or null when none has yet. A prompt wins over a take; the first turn wins over later ones.
 * A follow-up collapsed into another (`inputs.collapsed`) is answered by that one's turn.
 */
export async function readTurnOfInput(readModels: DataSource, key: string, input: string): Promise<TurnView | null> {
  const answering = await answeringInput(readModels, key, input);
  const row = await withApprovals(readModels.manager.createQueryBuilder(Turns, 't'))
    .where('t.conversation = :key', { key })
    .andWhere("(t.promptId = :input OR t.steered @> jsonb_build_array(jsonb_build_object('id', CAST(:input AS text))))", { input: answering })
    .orderBy('t.promptId = :input', 'DESC')
    .addOrderBy('t.startedAt', 'ASC')
    .getOne();
  return row ? toTurnView(row, row.approvals) : null;
}

/**
 * The input whose turn answers `input`: itself, or the follow-up it was collapsed into, followed
 * to the last one — in one query however long the chain a `latest` queue made.
 */
async function answeringInput(readModels: DataSource, key: string, input: string): Promise<string> {
  const rows: { id: string }[] = await readModels.query(
    `WITH RECURSIVE chain (id, next, hops) AS (
       SELECT id, collapsed_into, 0 FROM companion.inputs WHERE conversation = $1 AND id = $2
       UNION ALL
       SELECT i.id, i.collapsed_into, chain.hops + 1 FROM companion.inputs i JOIN chain ON i.conversation = $1 AND i.id = chain.next
       WHERE chain.hops < $3
     )
     SELECT id FROM chain ORDER BY hops DESC LIMIT 1`,
    [key, input, MAX_COLLAPSES_FOLLOWED],
  );
  return rows[0]?.id ?? input;
}
