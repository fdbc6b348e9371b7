import type { DomainEvent, EventDataOf } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import type { InputRules } from './rules';
import { writeRefusal } from './shared';
import { withAwaiting } from '../state';

/** A call's approval as decided (`approval.decided`, less the input that decided it). */
export type ApprovalDecision = Omit<EventDataOf<'approval.decided'>, 'input'>;

/**
 * A person's decision on a call waiting for approval: stored (`approval.decided`) when a call
 * waits under that approval and the turn is not ending (a stop closes its waiting calls unrun),
 * else refused — and refused when its subject may not write, or the tool's schema refuses the
 * edited arguments of an approval. The call leaves `awaiting` with it: decided once.
 */
export const approvalRules: InputRules<'approval', ApprovalDecision, Pick<EventDataOf<'approval.refused'>, 'code' | 'message'>> = {
  decide: (state, input, { agents }) => {
    const refused = (code: EventDataOf<'approval.refused'>['code'], message: string): DomainEvent[] => [
      { type: 'approval.refused', data: { input: input.id, approval: input.approval, code, message } },
    ];
    const unwritable = writeRefusal(state, input.subject);
    if (unwritable !== null) return refused('forbidden', unwritable);
    const waiting = state.awaiting.find((a) => a.approval === input.approval);
    if (!waiting) return refused('not_awaiting', `no call waits for approval ${input.approval}`);
    if (state.ending !== null) return refused('not_awaiting', `the turn was asked to end (${state.ending}): its waiting calls are closed unrun`);
    const edited = input.decision === 'approve' ? (input.arguments ?? null) : null;
    // Checked by the schema of the agent whose tool it is (a handoff of the same reply does not change that).
    const agent = waiting.agent ?? state.agent;
    const error = edited === null || agent === null ? null : (agents.argumentsError?.(agent, waiting.tool, edited) ?? null);
    if (error !== null) return refused('invalid_arguments', `the edited arguments of ${waiting.tool} are refused: ${error}`);
    const { turn, step, approval, callId, tool } = waiting;
    return [
      {
        type: 'approval.decided',
        data: { turn, step, approval, callId, tool, decision: input.decision, reason: input.reason ?? null, arguments: edited, subject: input.subject, input: input.id },
      },
    ];
  },
  receiptKeys: (input) => [receiptKey.approvalDecision(input.id)],
  receipt: {
    // A decision by a timeout names no input: it is no receipt of any.
    'approval.decided': { settles: true, read: ({ input: _input, ...decision }) => ({ answer: decision }) },
    'approval.refused': { settles: true, read: ({ code, message }) => ({ refusal: { code, message } }) },
  },
  events: {
    'approval.decided': {
      evolve: (state, data) => withAwaiting(state, state.awaiting.filter((a) => a.approval !== data.approval)),
      // The state makes a call decided once (it leaves `awaiting`); a person's decision is its input's receipt.
      onceKey: (data) => (data.input === null ? `approval-decided:${data.approval}` : receiptKey.approvalDecision(data.input)),
    },
    'approval.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.approvalDecision(data.input) },
  },
};
