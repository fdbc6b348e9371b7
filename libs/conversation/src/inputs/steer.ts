import type { Rejection } from '@rudder/contracts';
import { sameInput } from '../same-input';
import { acceptance, decideMessage, guardFailed, messageReceiptKeys, rejected } from './message';
import { REUSED, type InputRules } from './rules';
import { lands } from './shared';

/** Where a steer goes: `landed` means `turn` shows it to the model before it ends. */
export type SteerAnswer = { turn: string | null; landed: boolean };

/**
 * A steer: a message for the running turn, decided under the lock so it is serialized with the
 * turn's close. It lands on the turn (`lands`), which takes it at its next step; or it waits as
 * a turn of its own.
 */
export const steerRules: InputRules<'steer', SteerAnswer, Rejection> = {
  decide: (state, input, context) =>
    decideMessage(state, input, context, {
      text: input.text,
      intoSteering: (policy) => lands(state, policy),
      accept: (policy) => {
        const landed = lands(state, policy);
        return [
          acceptance(input, input.text, [input.text]),
          { type: 'steer.accepted', data: { input: { id: input.id, text: input.text }, turn: landed ? state.runningTurn : null, landed } },
        ];
      },
    }),
  receiptKeys: messageReceiptKeys,
  receipt: {
    // This steer's acceptance: its answer is the steer.accepted that comes with it.
    'input.accepted': { settles: true, read: (data, input) => (sameInput(data.input, input) ? undefined : REUSED) },
    'steer.accepted': {
      // Written with the steer's `input.accepted`, which is the once key that settles it.
      settles: false,
      read: (data, input) => (sameInput({ kind: 'steer', text: data.input.text }, input) ? { answer: { turn: data.turn, landed: data.landed } } : REUSED),
    },
    'input.rejected': rejected(),
    'guard.failed': guardFailed('steer'),
  },
  events: {},
  guarded: (_state, input) => ({ kind: 'steer', text: input.text }),
};
