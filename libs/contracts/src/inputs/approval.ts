import { z } from 'zod';
import { ApprovalId, InputId } from '../conversation-key';
import { eventContract, NAMES_NONE, namesAnswers } from '../event-parts';
import { StorableString } from '../storable-text';
import { envelope, inputKind } from './shared';

/** How long an approval's reason and edited arguments may be. */
export const APPROVAL_REASON_MAX = 2000;
export const APPROVAL_ARGUMENTS_MAX = 100_000;

/**
 * A person's decision on a tool call that waits for approval (`approval.requested`): run it
 * (with `arguments`, an edited version of the call's JSON arguments the tool's schema must
 * accept), or not (`reason` is what the model reads). `id` is the decision's own.
 */
export const ApprovalInputV1 = z.object({
  ...envelope,
  type: z.literal('approval'),
  approval: ApprovalId,
  decision: z.enum(['approve', 'deny']),
  reason: StorableString.max(APPROVAL_REASON_MAX).optional(),
  arguments: StorableString.max(APPROVAL_ARGUMENTS_MAX).optional(),
});
export type ApprovalInput = z.infer<typeof ApprovalInputV1>;

/**
 * `POST /v1/conversations/{key}/approvals/{approvalId}`: run the waiting call (`approve`, with
 * `arguments` — an edited version of its arguments, a JSON object its tool's schema must accept —
 * or as the model called it), or not (`deny`; `reason` is what the model reads).
 */
export const ApprovalBody = z
  .object({
    decision: z.enum(['approve', 'deny']),
    reason: StorableString.max(APPROVAL_REASON_MAX).optional(),
    arguments: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type ApprovalBody = z.infer<typeof ApprovalBody>;

export const ApprovalDecisionAnswer = z
  .object({
    approvalId: z.string(),
    turn: z.string(),
    callId: z.string(),
    tool: z.string(),
    decision: z.enum(['approve', 'deny']),
    reason: z.string().nullable(),
    arguments: z.string().nullable().describe('The edited arguments the call runs with (JSON); null: as the model called it.'),
    subject: z.string().nullable().describe('Who decided; null when its timeout did.'),
  })
  .meta({
    id: 'ApprovalDecision',
    description: 'The decision as stored: the same decision with the same arguments again answers it again; any other later decision is 409.',
  });
export type ApprovalDecision = z.infer<typeof ApprovalDecisionAnswer>;

export const APPROVAL = inputKind({
  record: ApprovalInputV1,
  events: {
    /**
     * The call waiting for `approval` was decided: by `subject` through the API (its decision
     * input `input`), or by its timeout (`subject` and `input` null, `reason` says so). An
     * approved call runs — with `arguments` when the person edited them (null: as the model
     * called it); a denied one gets a result saying so, with the reason, and is never run.
     */
    'approval.decided': eventContract(
      z.object({
        turn: z.string(),
        step: z.number().int().nonnegative(),
        approval: ApprovalId,
        callId: z.string(),
        tool: z.string(),
        decision: z.enum(['approve', 'deny']),
        reason: z.string().nullable(),
        arguments: z.string().nullable(),
        subject: z.string().nullable(),
        input: InputId.nullable(),
      }),
      // A decision by a timeout answers no input.
      (data) => (data.input === null ? NAMES_NONE : namesAnswers(data.input)),
    ),
    /**
     * A decision input decided nothing: its subject may not write (`forbidden`), no call waits
     * under that approval (`not_awaiting`: decided before, closed by the turn's end, or unknown),
     * or the tool's schema refused its edited arguments (`invalid_arguments`, `message` says why).
     */
    'approval.refused': eventContract(
      z.object({
        input: InputId,
        approval: ApprovalId,
        code: z.enum(['forbidden', 'not_awaiting', 'invalid_arguments']),
        message: z.string(),
      }),
      (data) => namesAnswers(data.input),
    ),
  },
});
