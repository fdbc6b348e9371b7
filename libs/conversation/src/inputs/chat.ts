import { inputText, type DomainEvent, type Rejection } from '@rudder/contracts';
import type { InputPolicy } from '../decide';
import { sameInput } from '../same-input';
import type { ConversationState } from '../state';
import { acceptance, decideMessage, guardFailed, messageReceiptKeys, rejected } from './message';
import { REUSED, type InputOf, type InputRules } from './rules';
import type { Refusal } from './shared';

/** A chat taken into the log, `ahead` inputs before it (0: it starts next). */
export type ChatAnswer = { ahead: number };

/**
 * A chat: a message answered by a turn of its own, after what waits before it. It may ask the
 * running turn to end (`onBusy` interrupt or rollback, or continuing the running turn's input),
 * and then runs next.
 */
export const chatRules: InputRules<'chat', ChatAnswer, Rejection> = {
  decide: (state, input, context) => {
    const text = inputText(input.messages);
    return decideMessage(state, input, context, {
      text,
      named: input.agent,
      derivedFrom: input.derivedFrom,
      refuse: (policy) => busyRefusal(state, input, policy),
      accept: () => {
        // Its place: the follow-ups waiting (steers that missed their turn among them) and the running turn.
        const ahead = state.queue.length + (state.runningTurn ? 1 : 0);
        const mode = windDownMode(state, input);
        const windDown: DomainEvent[] = mode === null ? [] : [{ type: 'stop.requested', data: { stop: input.id, turn: state.runningTurn, mode } }];
        return [acceptance(input, text, input.messages, ahead), ...windDown];
      },
    });
  },
  receiptKeys: messageReceiptKeys,
  receipt: {
    // `ahead` is absent only on events stored before the worker recorded it.
    'input.accepted': { settles: true, read: (data, input) => (sameInput(data.input, input) ? { answer: { ahead: data.ahead ?? 0 } } : REUSED) },
    'input.rejected': rejected(),
    'guard.failed': guardFailed('chat'),
  },
  events: {},
  guarded: (_state, input) => ({ kind: 'chat', text: inputText(input.messages), agent: input.agent }),
};

/**
 * A chat refused as busy: `onBusy` reject while a turn runs, or `ifSteerable` where it would
 * wind down a turn of an agent that takes no steers.
 */
function busyRefusal(state: ConversationState, input: InputOf<'chat'>, policy: InputPolicy): Refusal | null {
  if (input.onBusy === 'reject' && state.runningTurn !== null) {
    return { code: 'busy', message: `a turn is running (${state.runningTurn}) and onBusy is reject` };
  }
  if (input.ifSteerable === true && windDownMode(state, input) !== null && policy.maxTaken === 0) {
    return { code: 'busy', message: `a turn is running (${state.runningTurn}) and the agent takes no steers, so it is not wound down for another input` };
  }
  return null;
}

/**
 * How a chat asks the running turn to end, if it does: `onBusy` interrupt or rollback; or, for
 * a chat that continues an input (`continues`), an interrupt when that input no longer waits
 * (its turn is the one running) — one that continues an input still queued queues behind it.
 */
function windDownMode(state: ConversationState, input: InputOf<'chat'>): 'interrupt' | 'rollback' | null {
  if (state.runningTurn === null) return null;
  if (input.onBusy === 'interrupt' || input.onBusy === 'rollback') return input.onBusy;
  if (input.continues !== undefined && !state.queue.some((p) => p.id === input.continues)) return 'interrupt';
  return null;
}
