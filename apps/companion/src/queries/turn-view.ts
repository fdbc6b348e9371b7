import type { TurnView } from '@rudder/contracts';
import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { Approvals, Turns, type ApprovalRow, type TurnRow } from '../read-models/entities';
import { toTurnApproval } from './approval-view';

/** A turn's row with its approvals (in no particular order: `toTurnView` puts them in request order). */
export type TurnWithApprovals = TurnRow & { approvals: ApprovalRow[] };

/** One turn of a conversation, or null when the conversation has no turn of that id. */
export async function readTurn(readModels: DataSource, key: string, turn: string): Promise<TurnView | null> {
  const row = await withApprovals(readModels.manager.createQueryBuilder(Turns, 't'))
    .where('t.conversation = :key', { key })
    .andWhere('t.id = :turn', { turn })
    .getOne();
  return row ? toTurnView(row, row.approvals) : null;
}

/** Turns (alias `t`) read with their approvals (`approvals`, alias `a`), in the same statement: a turn and its approvals as of one moment. */
export const withApprovals = (query: SelectQueryBuilder<TurnRow>): SelectQueryBuilder<TurnWithApprovals> =>
  query.leftJoinAndMapMany('t.approvals', Approvals.options.name, 'a', 'a.conversation = t.conversation AND a.turn = t.id') as SelectQueryBuilder<TurnWithApprovals>;

/** A turn as the API shows it, its approvals in request order. */
export const toTurnView = (r: TurnRow, approvals: readonly ApprovalRow[]): TurnView => ({
  id: r.id,
  prompt: { id: r.promptId, text: r.promptText },
  status: r.status,
  outcome: r.outcome,
  steered: r.steered,
  content: r.content,
  agent: r.agent,
  usage: r.usage,
  woundDown: r.woundDown,
  rolledBack: r.rolledBack,
  approvals: [...approvals].sort((a, b) => a.position - b.position).map(toTurnApproval),
  startedAt: r.startedAt,
  endedAt: r.endedAt,
});
