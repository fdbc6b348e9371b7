import type { DomainEvent, EventDataOf } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import type { InputRules } from './rules';
import { pendingInput, writeRefusal } from './shared';
import { strongerEnding } from '@rudder/agent/turn';
import { without } from '../state';

/** The turn a stop stopped (null when none ran, or the one it names no longer runs). */
export type StopAnswer = { turn: string | null };

/**
 * A stop: the running turn ends as soon as it can (or winds down: `graceful`), and with
 * `discardPending` everything waiting is dropped. A stop that names a turn no longer running
 * stops nothing, and discards nothing: it was meant for that turn.
 */
export const stopRules: InputRules<'stop', StopAnswer, EventDataOf<'stop.refused'>['code']> = {
  decide: (state, input) => {
    if (writeRefusal(state, input.subject) !== null) return [{ type: 'stop.refused', data: { stop: input.id, code: 'forbidden' } }];
    const meant = input.turn === undefined || input.turn === state.runningTurn;
    const mode = input.graceful ? 'wind-down' : 'stop';
    const events: DomainEvent[] = [{ type: 'stop.requested', data: { stop: input.id, turn: meant ? state.runningTurn : null, mode } }];
    if (meant && input.discardPending) {
      for (const pending of [...state.steers, ...state.queue]) {
        events.push({ type: 'input.discarded', data: { input: pendingInput(pending), stop: input.id } });
      }
    }
    return events;
  },
  receiptKeys: (input) => [receiptKey.control('stop', input.id)],
  receipt: {
    'stop.requested': { settles: true, read: (data) => ({ answer: { turn: data.turn } }) },
    'stop.refused': { settles: true, read: (data) => ({ refusal: data.code }) },
  },
  events: {
    'stop.requested': {
      evolve: (state, data) => {
        if (data.turn === null || data.turn !== state.runningTurn) return state;
        // The input that asked to interrupt or roll back the turn runs next.
        const asker = state.queue.find((i) => i.id === data.stop);
        const queue = asker ? [{ ...asker, seq: 0 }, ...without(state.queue, asker.id)] : state.queue;
        return { ...state, ending: strongerEnding(state.ending, data.mode), queue };
      },
      onceKey: (data) => receiptKey.control('stop', data.stop),
    },
    'stop.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('stop', data.stop) },
    'input.discarded': {
      evolve: (state, data) => ({ ...state, queue: without(state.queue, data.input.id), steers: without(state.steers, data.input.id) }),
      onceKey: (data) => `discard:${data.input.id}`,
    },
  },
};
