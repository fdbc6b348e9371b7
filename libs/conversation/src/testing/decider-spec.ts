import { expect } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import type { TurnState } from '@rudder/agent/turn';
import { decideDue, decideInputs, decideTurnCommit, startNextTurn, type Agents, type InputPolicy } from '../decide';
import type { ForkSource, InputOf } from '../inputs';
import { evolve, onceKey } from '../event-rules';
import { receiptOf } from '../receipts';
import { initialState, type ConversationState } from '../state';

/**
 * The decider's specs, given / when / then (the shape of emmett's `DeciderSpecification`):
 * `given(events)` is the conversation's log so far, `when(input)` what the worker decides on it
 * under the lock, `then(events)` what it stores — or `thenRefused(code)`. The once keys stored
 * are the given events' (an input they answered adds nothing, as in the store).
 */
export function deciderSpec(agents: Agents = agentsWith(policy), forkSource: (input: InputRecord) => ForkSource | undefined = () => undefined) {
  const given = (events: readonly DomainEvent[] = []): Given => {
    const state = events.reduce(evolve, initialState());
    const decided = (made: DomainEvent[], inputs: InputRecord[] = []): Decided => new Decided(made, made.reduce(evolve, state), inputs, () => given([...events, ...made]));
    return {
      events,
      state,
      and: (...inputs) => given([...events, ...decideInputs(state, inputs, storedKeys(events), agents, decidedAt(inputs), undefined, forkSource)]),
      andTurnStarts: (turn, at = AFTER_EVERY_HOLD) => given([...events, ...startNextTurn(state, turn, at)]),
      andStored: (...stored) => given([...events, ...stored]),
      when: (...inputs) => decided(decideInputs(state, inputs, storedKeys(events), agents, decidedAt(inputs), undefined, forkSource), inputs),
      whenTurnStarts: (turn, at = AFTER_EVERY_HOLD) => decided(startNextTurn(state, turn, at)),
      whenCommitting: (turn, committed) => decided(decideTurnCommit(state, turn, committed)),
      whenDue: (now) => decided(decideDue(state, now, agents, base.conversation)),
    };
  };
  return { given };
}

/** When a spec's batch is decided: as the last of its records was sent (time is the records' data). */
const decidedAt = (inputs: readonly InputRecord[]): Date => new Date(Math.max(...inputs.map((input) => Date.parse(input.sentAt))));

/** A moment after any hold a spec's queue has (`queue.held`): the latest time a `Date` holds. */
const AFTER_EVERY_HOLD = new Date(8.64e15);

/** The log so far, and the state it folds to. */
export type Given = {
  readonly events: readonly DomainEvent[];
  readonly state: ConversationState;
  /** And these inputs were decided (their events appended). */
  and(...inputs: InputRecord[]): Given;
  /** And the next turn started (`startNextTurn`) at `at` (absent: once every hold of the queue is over). */
  andTurnStarts(turn: string, at?: Date): Given;
  /** And these events were stored (a turn's own: its replies, results, end). */
  andStored(...events: DomainEvent[]): Given;
  /** When these inputs come, in one batch (`decideInputs`). */
  when(...inputs: InputRecord[]): Decided;
  /** When the next turn is to start (`startNextTurn`) at `at` (absent: once every hold of the queue is over). */
  whenTurnStarts(turn: string, at?: Date): Decided;
  /** When the running turn commits these events (`decideTurnCommit`). */
  whenCommitting(turn: TurnState, events: DomainEvent[]): Decided;
  /** When a worker's deadline timer fires at `now` (`decideDue`: approvals timed out, schedules' firings). */
  whenDue(now: Date): Decided;
};

/** What a decision stores (`events`) and the state after it (`state`), for a closer look where `then…` does not say it all. */
export class Decided {
  constructor(
    readonly events: DomainEvent[],
    readonly state: ConversationState,
    private readonly inputs: InputRecord[],
    private readonly next: () => Given,
  ) {}

  /** The log with what was decided stored: to go on from. */
  get after(): Given {
    return this.next();
  }

  /** Then exactly these events are stored. */
  then(expected: DomainEvent[]): this {
    expect(this.events).toEqual(expected);
    return this;
  }

  /** Then the events stored are of these types, in this order. */
  thenTypes(...expected: DomainEvent['type'][]): this {
    expect(types(this.events)).toEqual(expected);
    return this;
  }

  /** Then the one input is refused with this code — the only event stored is its receipt, and a refusal — and nothing else is stored. */
  thenRefused(code: string): this {
    expect(this.inputs).toHaveLength(1);
    expect(this.events).toHaveLength(1);
    const outcome = receiptOf(this.inputs[0], this.events[0]);
    const refusal = outcome !== undefined && 'refusal' in outcome ? outcome.refusal : undefined;
    expect(typeof refusal === 'object' ? refusal.code : refusal).toBe(code);
    return this;
  }

  /** Then nothing is stored. */
  thenNothing(): this {
    expect(this.events).toEqual([]);
    return this;
  }
}

const storedKeys = (events: readonly DomainEvent[]) => new Set(events.map(onceKey));

export const sentAt = '2026-11-30T00:00:00.000Z';
export const base = { v: 1 as const, conversation: 'c', subject: 'alice', sentAt };

export const policy: InputPolicy = { maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } };
export const agentsWith = (p: InputPolicy): Agents => ({ defaultAgent: 'default', policyOf: (name) => (name === 'default' ? p : undefined) });

export const chat = (id: string, extra: Partial<InputOf<'chat'>> = {}): InputRecord => ({ ...base, type: 'chat', id, messages: [id], onBusy: 'enqueue', ...extra });
export const steer = (id: string, extra: Partial<InputOf<'steer'>> = {}): InputRecord => ({ ...base, type: 'steer', id, text: id, ...extra });
export const stop = (id: string, extra: Partial<InputOf<'stop'>> = {}): InputRecord => ({ ...base, type: 'stop', id, discardPending: false, ...extra });
export const retract = (id: string, target: { id: string } | { latest: 'chat' | 'steer' }): InputRecord => ({ ...base, type: 'retract', id, target });
export const promote = (id: string, target: string): InputRecord => ({ ...base, type: 'promote', id, target });

/** Alice opened the conversation; the default agent answers it. */
export const opened = (owner = 'alice'): DomainEvent => ({ type: 'conversation.opened', data: { owner, agent: 'default' } });
/** A conversation alice opened, with nothing running or waiting. */
export const IDLE: readonly DomainEvent[] = [opened()];
/** Turn t1 running, started from alice's chat p0. */
export const RUNNING: readonly DomainEvent[] = [
  opened(),
  { type: 'input.accepted', data: { input: { id: 'p0', kind: 'chat', text: 'p0', messages: ['p0'], subject: 'alice', sentAt }, ahead: 0 } },
  { type: 'turn.started', data: { turn: 't1', prompt: { id: 'p0', text: 'p0' } } },
  { type: 'input.delivered', data: { input: { id: 'p0', kind: 'chat' }, turn: 't1' } },
];

export const types = (events: readonly DomainEvent[]) => events.map((e) => e.type);
/** Each steer decision: [the input, its turn, landed]. */
export const decisions = (events: readonly DomainEvent[]) => events.flatMap((e) => (e.type === 'steer.accepted' ? [[e.data.input.id, e.data.turn, e.data.landed]] : []));
/** Each refused chat or steer: [the input, the code]. */
export const rejections = (events: readonly DomainEvent[]) => events.flatMap((e) => (e.type === 'input.rejected' ? [[e.data.input.id, e.data.code]] : []));
