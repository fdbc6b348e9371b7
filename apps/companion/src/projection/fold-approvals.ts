import type { ApprovalRow } from '../read-models/entities';
import type { Folds, Of, RowSet } from './row-set';

/**
 * The calls that needed a person's approval (`ApprovalRow`), and their decisions in the transcript.
 * - `approval.requested`: an approval awaiting, at the event's position (the request order).
 * - `approval.decided`: an awaiting approval is approved or denied (reason, edited arguments,
 *   subject, when), and the decision enters the transcript as an `approval` row under the
 *   approval's id, at the event's position (`decisionText` says how it reads).
 * - `tool.ended` for a call whose approval still awaits: the turn closed the call unrun (a stop,
 *   an interrupt), and the approval is closed with it. (A turn's end closes every approval of
 *   it still awaiting: `closeApprovals`.)
 * Only an awaiting approval changes state, and the first final state stands; an approval
 * requested twice changes nothing.
 */
export const APPROVAL_FOLDS: Folds = {
  'approval.requested': { reads: (data) => ({ approvalsOf: [data.turn] }), fold: requestApproval },
  'approval.decided': { reads: (data) => ({ approvalsOf: [data.turn] }), fold: decideApproval },
  'tool.ended': {
    reads: (data) => ({ approvalsOf: [data.turn] }),
    fold: (rows, { conversation, data }) => closeApprovals(rows, conversation, data.turn, (a) => a.step === data.step && a.callId === data.callId),
  },
};

function requestApproval(rows: RowSet, event: Of<'approval.requested'>): void {
  const { turn, step, approval, call, requestedAt, expiresAt } = event.data;
  if (rows.approval(event.conversation, approval)) return;
  rows.putApproval({
    conversation: event.conversation,
    approval,
    turn,
    step,
    callId: call.id,
    tool: call.name,
    arguments: call.arguments,
    requestedAt,
    expiresAt,
    state: 'awaiting',
    reason: null,
    editedArguments: null,
    subject: null,
    decidedAt: null,
    position: event.position,
  });
}

/** An awaiting approval decided, and its decision in the transcript; a call decided or closed before keeps its first state. */
function decideApproval(rows: RowSet, event: Of<'approval.decided'>): void {
  const c = event.conversation;
  const { turn, approval, decision, reason, arguments: edited, subject } = event.data;
  const row = rows.approval(c, approval);
  if (!row || row.state !== 'awaiting') return;
  Object.assign(row, { state: decision === 'approve' ? 'approved' : 'denied', reason, editedArguments: edited, subject, decidedAt: event.at });
  rows.touchApproval(row);
  rows.addTranscript({ conversation: c, position: event.position, part: 0, id: approval, role: 'approval', text: decisionText(row), turn, steered: false, at: event.at, forkedFrom: null });
}

/** Closes, unrun, the approvals of `turn` that still await and match: nobody decided them before the turn closed their calls. */
export function closeApprovals(rows: RowSet, conversation: string, turn: string, matches: (row: ApprovalRow) => boolean): void {
  for (const row of rows.approvalsOf(conversation, turn)) {
    if (row.state !== 'awaiting' || !matches(row)) continue;
    row.state = 'closed';
    rows.touchApproval(row);
  }
}

/**
 * How a decision reads in the transcript (role `approval`), from its approval's row once decided:
 * - approved as called: `approved <tool>(<arguments>)`, e.g. `approved send_email({"to":"a"})`;
 * - approved with edited arguments: `approved <tool> with edited arguments <edited>`;
 * - denied by a person: `denied <tool>: <reason>`, or `denied <tool>` without one;
 * - denied by its timeout (no subject): `denied <tool>: <reason>`, the worker's reason saying
 *   it timed out (`timed out: nobody decided by …`), or `denied <tool>: timed out` without one.
 * The arguments are the JSON as stored, not reformatted.
 */
export function decisionText(row: Pick<ApprovalRow, 'state' | 'tool' | 'arguments' | 'editedArguments' | 'reason' | 'subject'>): string {
  if (row.state === 'approved')
    return row.editedArguments === null ? `approved ${row.tool}(${row.arguments})` : `approved ${row.tool} with edited arguments ${row.editedArguments}`;
  const reason = row.reason ?? (row.subject === null ? 'timed out' : null);
  return reason === null ? `denied ${row.tool}` : `denied ${row.tool}: ${reason}`;
}
