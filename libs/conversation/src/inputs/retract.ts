import type { EventDataOf } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import { without, type PendingInput } from '../state';
import type { InputRules } from './rules';
import { pendingInput, writeRefusal } from './shared';

/** The pending input a retraction took back. */
export type RetractAnswer = { id: string; text: string };

/**
 * A retraction takes back a pending input — by id, or the latest of a queue — which is then
 * never answered; what is no longer pending (delivered: taken, or its turn started) or unknown
 * is not found.
 */
export const retractRules: InputRules<'retract', RetractAnswer, EventDataOf<'retract.refused'>['code']> = {
  decide: (state, input) => {
    const { target } = input;
    const named = 'id' in target ? target.id : null;
    if (writeRefusal(state, input.subject) !== null) return [{ type: 'retract.refused', data: { retract: input.id, target: named, code: 'forbidden' } }];
    const pending = [...state.queue, ...state.steers];
    const found = 'id' in target ? pending.find((p) => p.id === target.id) : latestOf(pending, target.latest);
    if (found) return [{ type: 'input.retracted', data: { input: pendingInput(found), retract: input.id } }];
    return [{ type: 'retract.refused', data: { retract: input.id, target: named, code: 'not_found' } }];
  },
  receiptKeys: (input) => [receiptKey.control('retract', input.id)],
  receipt: {
    'input.retracted': { settles: true, read: (data) => ({ answer: { id: data.input.id, text: data.input.text } }) },
    'retract.refused': { settles: true, read: (data) => ({ refusal: data.code }) },
  },
  events: {
    'input.retracted': {
      evolve: (state, data) => ({ ...state, queue: without(state.queue, data.input.id), steers: without(state.steers, data.input.id) }),
      onceKey: (data) => receiptKey.control('retract', data.retract),
    },
    'retract.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('retract', data.retract) },
  },
};

const latestOf = (pending: PendingInput[], kind: 'chat' | 'steer') =>
  pending.filter((p) => p.kind === kind).sort((a, b) => a.seq - b.seq).at(-1);
