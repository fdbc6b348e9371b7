import type { CompanionApproval, TurnView } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Approvals, type ApprovalRow } from '../read-models/entities';

/** A call's approval as the gateway checks a decision against it (`CompanionApproval` in contracts), or null when the conversation has none of that id. */
export async function readApproval(readModels: DataSource, key: string, approval: string): Promise<CompanionApproval | null> {
  const row = await readModels.manager.findOneBy(Approvals, { conversation: key, approval });
  return row ? { ...toTurnApproval(row), step: row.step } : null;
}

/** A call's approval as its turn shows it (contracts' `TurnApproval`). */
type TurnApproval = TurnView['approvals'][number];
export const toTurnApproval = (r: ApprovalRow): TurnApproval => ({
  approvalId: r.approval,
  turn: r.turn,
  callId: r.callId,
  tool: r.tool,
  arguments: r.arguments,
  requestedAt: r.requestedAt,
  expiresAt: r.expiresAt,
  state: r.state,
  reason: r.reason,
  editedArguments: r.editedArguments,
  subject: r.subject,
  decidedAt: r.decidedAt,
});
