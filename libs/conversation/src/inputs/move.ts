import type { DomainEvent, EventDataOf } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import { without, type PendingInput } from '../state';
import { REUSED, type InputRules } from './rules';
import { writeRefusal } from './shared';

/** The follow-up as it waits after the move: the input it waits just before (null: the last), and how many wait ahead of it. */
export type MoveAnswer = { id: string; before: string | null; position: number };

/** Why a move changed nothing: its code and what it says. */
export type MoveRefusal = Pick<EventDataOf<'move.refused'>, 'code' | 'message'>;

/**
 * A move puts a pending follow-up (a chat waiting in the queue) at another place in the queue:
 * just before another input waiting there (`before`), or at the end (`before: null`). The turns
 * then start in the new order. What is no longer pending (delivered, taken back, dropped) or
 * unknown is not found; a steer (waiting for the running turn, or in the queue as a turn of its
 * own) is not a follow-up; `before` must be another input waiting in the queue.
 */
export const moveRules: InputRules<'move', MoveAnswer, MoveRefusal> = {
  decide: (state, input) => {
    const { target, before } = input;
    const refused = (code: MoveRefusal['code'], message: string): DomainEvent[] => [
      { type: 'move.refused', data: { move: input.id, target, before, code, message } },
    ];
    const unwritable = writeRefusal(state, input.subject);
    if (unwritable !== null) return refused('forbidden', unwritable);
    const pending = state.queue.find((p) => p.id === target) ?? state.steers.find((p) => p.id === target);
    if (!pending) return refused('not_found', `input ${target} is not pending: it was delivered, taken back or dropped, or never accepted`);
    if (pending.kind !== 'chat') return refused('not_follow_up', `input ${target} is a steer; only a pending follow-up (a chat) can be moved`);
    if (before !== null && (before === target || !state.queue.some((p) => p.id === before))) {
      return refused('before', `input ${before} is not another input waiting in the queue, so ${target} cannot go before it`);
    }
    const queue = moved(state.queue, pending, before);
    return [{ type: 'input.moved', data: { move: input.id, input: target, before, position: queue.findIndex((p) => p.id === target) } }];
  },
  receiptKeys: (input) => [receiptKey.control('move', input.id)],
  receipt: {
    'input.moved': {
      settles: true,
      read: (data, input) => (data.input === input.target && data.before === input.before ? { answer: { id: data.input, before: data.before, position: data.position } } : REUSED),
    },
    'move.refused': {
      settles: true,
      read: (data, input) => (data.target === input.target && data.before === input.before ? { refusal: { code: data.code, message: data.message } } : REUSED),
    },
  },
  events: {
    'input.moved': {
      evolve: (state, data) => {
        const pending = state.queue.find((p) => p.id === data.input);
        return pending ? { ...state, queue: moved(state.queue, pending, data.before) } : state;
      },
      onceKey: (data) => receiptKey.control('move', data.move),
    },
    'move.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('move', data.move) },
  },
};

/**
 * The queue with `pending` just before `before` (at the end when null, or when `before` no
 * longer waits). Its `seq` stays its acceptance's: what joins the queue later (a steer that did
 * not land, the steers a turn did not take) is merged in by `seq` without reordering what waits
 * (`mergeInOrder`), so a move stands.
 */
function moved(queue: PendingInput[], pending: PendingInput, before: string | null): PendingInput[] {
  const rest = without(queue, pending.id);
  // Stryker disable next-line ConditionalExpression: with `before` null, `findIndex` finds no input of id null: -1 too
  const at = before === null ? -1 : rest.findIndex((p) => p.id === before);
  return at === -1 ? [...rest, pending] : [...rest.slice(0, at), pending, ...rest.slice(at)];
}

