import { inputText, type DomainEvent, type EventDataOf, type QueuePolicy, type Rejection } from '@rudder/contracts';
import type { InputPolicy } from '../decide';
import { sameInput } from '../same-input';
import { without, type ConversationState, type PendingInput } from '../state';
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
      accept: (policy) => {
        const collapse = collapsing(state, input, policy);
        // Its place: the follow-ups waiting (steers that missed their turn among them) and the running turn;
        // those it collapses are no longer ahead of it, and one it merges into is where it waits.
        const waiting = collapse === null ? state.queue.length : collapse.policy === 'latest' ? state.queue.length - collapse.from.length : state.queue.length - 1;
        const ahead = waiting + (state.runningTurn ? 1 : 0);
        const mode = windDownMode(state, input);
        const windDown: DomainEvent[] = mode === null ? [] : [{ type: 'stop.requested', data: { stop: input.id, turn: state.runningTurn, mode } }];
        const collapsed: DomainEvent[] = collapse === null ? [] : [{ type: 'inputs.collapsed', data: collapse }];
        return [acceptance(input, text, input.messages, ahead), ...windDown, ...collapsed, ...holding(input, policy, context.now)];
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
  events: {
    'queue.held': {
      // Held the longer of the two: a worker whose clock is behind the one before it moves nothing earlier.
      evolve: (state, { until }) => ({ ...state, heldUntil: state.heldUntil !== null && state.heldUntil > until ? state.heldUntil : until }),
      onceKey: (data) => `held:${data.input}`,
    },
    'inputs.collapsed': {
      evolve: (state, { into, from, policy }) => {
        const rest = from.reduce(without, state.queue);
        if (policy === 'latest') return { ...state, queue: rest };
        // Merged: the follow-up waiting takes the new one's messages after its own, as one chat of several messages.
        const joined = state.queue.filter((p) => from.includes(p.id)).flatMap((p) => p.messages);
        const merged = (p: PendingInput): PendingInput => (p.id === into ? { ...p, messages: [...p.messages, ...joined], text: inputText([...p.messages, ...joined]) } : p);
        return { ...state, queue: rest.map(merged) };
      },
      // An input is collapsed once: by the chat accepted with its collapse (one per chat accepted).
      onceKey: (data) => `collapsed:${data.into}:${data.from.join(',')}`,
    },
  },
  guarded: (_state, input) => ({ kind: 'chat', text: inputText(input.messages), agent: input.agent }),
};

/**
 * What a chat accepted now collapses, by its `queue` policy (its own, else its agent's; `each`
 * collapses nothing): `latest` — every follow-up waiting (chats; a steer that did not land
 * keeps its turn) is answered as collapsed into it; `merge` and `{debounceMs}` — it joins the
 * last input waiting when that is a follow-up, so they are one turn. A chat that winds the
 * running turn down or continues another input keeps its own turn.
 */
function collapsing(state: ConversationState, input: InputOf<'chat'>, policy: InputPolicy): EventDataOf<'inputs.collapsed'> | null {
  const queue = queueOf(input, policy);
  if (queue === 'each' || !collapses(input)) return null;
  if (queue === 'latest') {
    const from = state.queue.filter((p) => p.kind === 'chat').map((p) => p.id);
    return from.length === 0 ? null : { into: input.id, from, policy: 'latest' };
  }
  const last = state.queue.at(-1);
  return last?.kind === 'chat' ? { into: last.id, from: [input.id], policy: 'merge' } : null;
}

/** A chat's queue policy (its own, else its agent's; `each` when neither says). */
const queueOf = (input: InputOf<'chat'>, policy: InputPolicy): QueuePolicy => input.queue ?? policy.queue ?? 'each';

/** A chat that winds the running turn down or continues another input keeps its own turn: it collapses nothing, and holds nothing. */
const collapses = (input: InputOf<'chat'>): boolean => input.onBusy === 'enqueue' && input.continues === undefined;

/**
 * A chat under `queue: {debounceMs}` holds the queue: no turn starts from it until `debounceMs`
 * after the chat was accepted (`now`: `queue.held`). It merged into the follow-up waiting (as
 * `merge`), so the follow-ups accepted less than `debounceMs` apart are one turn. Accepted, not
 * sent: however long the record took to come, the queue is quiet that long after it.
 */
function holding(input: InputOf<'chat'>, policy: InputPolicy, now: Date): DomainEvent[] {
  const queue = queueOf(input, policy);
  if (typeof queue !== 'object' || !collapses(input)) return [];
  return [{ type: 'queue.held', data: { input: input.id, until: new Date(now.getTime() + queue.debounceMs).toISOString() } }];
}

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
