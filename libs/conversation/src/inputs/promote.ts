import type { EventDataOf } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import type { InputRules } from './rules';
import { lands, steeringRoom, writeRefusal } from './shared';

/** The steer decision on the promoted follow-up. */
export type PromoteAnswer = { turn: string | null; landed: boolean };

/**
 * A promotion turns a pending follow-up (a chat waiting in the queue) into a steer of the
 * running turn: decided as a steer (`steer.accepted` of the follow-up). With the steering queue
 * full, or no turn to land on, the follow-up stays one: answered as a turn of its own.
 */
export const promoteRules: InputRules<'promote', PromoteAnswer, EventDataOf<'promote.refused'>['code']> = {
  decide: (state, input, { agents }) => {
    if (writeRefusal(state, input.subject) !== null) return [{ type: 'promote.refused', data: { promote: input.id, target: input.target, code: 'forbidden' } }];
    const target = state.queue.find((p) => p.id === input.target && p.kind === 'chat');
    const policy = agents.policyOf(state.agent ?? agents.defaultAgent);
    if (!target || !policy) return [{ type: 'promote.refused', data: { promote: input.id, target: input.target, code: 'not_found' } }];
    const landed = lands(state, policy) && steeringRoom(state, policy);
    return [{ type: 'steer.accepted', data: { input: { id: target.id, text: target.text }, turn: landed ? state.runningTurn : null, landed } }];
  },
  // The follow-up is decided as a steer once: a promotion of one decided before is answered by that decision.
  receiptKeys: (input) => [receiptKey.control('promote', input.id), receiptKey.steerDecided(input.target)],
  receipt: {
    'promote.refused': { settles: true, read: (data) => ({ refusal: data.code }) },
    // The promoted follow-up's steer decision (or the one it had already, sent as a steer or promoted before).
    'steer.accepted': { of: (input) => input.target, settles: true, read: (data) => ({ answer: { turn: data.turn, landed: data.landed } }) },
  },
  events: {
    'promote.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('promote', data.promote) },
  },
};
