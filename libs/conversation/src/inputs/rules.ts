import type { DomainEvent, EventDataOf, EventType, InputKind, InputRecord, KindEventType, MessageKind } from '@rudder/contracts';
import type { Agents, GuardOutcome } from '../decide';
import type { EventRulesTable } from '../event-rules';
import type { ConversationState } from '../state';
import type { ForkSource } from './fork';

/** An input of one kind. */
export type InputOf<K extends InputKind> = Extract<InputRecord, { type: K }>;

/**
 * What an event says of an input: it was answered (`answer`) or refused (`refusal`) — either
 * is final, the same input sent again gets the same — or its id is another input's (`reused`:
 * sent before with another kind or text), or its guard failed (`guardFailed`, its reason):
 * nothing was decided, and the same id sent again is guarded and decided again.
 */
export type OutcomeOf<Answer, Refusal> = { answer: Answer } | { refusal: Refusal } | { reused: true } | { guardFailed: string };

export const REUSED = { reused: true } as const;

/**
 * How one event type answers one input kind. The event answers the input when it names the
 * input's id among the ids it answers (`INPUT_IDS_NAMED` of @rudder/contracts).
 */
export type Reading<K extends InputKind, T extends EventType, Answer, Refusal> = {
  /** Which id of the input the event names: its own (when absent), or another it is about (a promotion's target). */
  of?(input: InputOf<K>): string;
  /**
   * Whether the event settles the input for good: stored, the input was handled and adds
   * nothing when it comes again (its kind's `receiptKeys` are these events' once keys). A failed
   * guard does not: the id stays open for the next try.
   */
  settles: boolean;
  /** It answers only a send it follows, never one after it (a failed guard: the next send is guarded again). */
  liveOnly?: true;
  /** The outcome it gives `input`; undefined when it is no answer yet (a steer's acceptance: its answer is the `steer.accepted` with it). */
  read(data: EventDataOf<T>, input: InputOf<K>): OutcomeOf<Answer, Refusal> | undefined;
};

/** An input kind's receipt: the events that answer it, and how each does. */
export type Receipt<K extends InputKind, Answer, Refusal> = { readonly [T in EventType]?: Reading<K, T, Answer, Refusal> };

/**
 * What a decision on an input sees beside the conversation's state: the deployment's agents,
 * what the agent's input guard said of it, and, for a fork, its source as the worker read it
 * (undefined: there is no such conversation).
 */
export type DecisionContext = { agents: Agents; guarded: GuardOutcome | undefined; forkSource?: ForkSource | undefined };

/**
 * What an agent's input guard is asked of an input before its decision: its text, as a message
 * of `kind` (a chat's or a steer's), and the agent a chat names (the conversation's own agent,
 * once chosen, answers instead).
 */
export type Guarded = { kind: MessageKind; text: string; agent?: string | undefined };

/**
 * Everything an input kind is to the conversation's decider, in one module of `inputs/` per
 * kind: its decision under the lock, the once keys that say it was handled, its receipt, the
 * rules of the events its contract declares (`events`), and what its agent's guard checks.
 * `Answer` and `Refusal` are what its receipt reads from the events that answer it.
 */
export type InputRules<K extends InputKind, Answer = unknown, Refusal = unknown> = {
  /**
   * What the input adds to the conversation's log, decided under its lock on `state`. Each
   * decision holds one of its receipt's settling events, or its guard's failure.
   */
  decide(state: ConversationState, input: InputOf<K>, context: DecisionContext): DomainEvent[];
  /** The once keys of the events that settle it (`receiptKey`): any one of them stored means it was handled before, and it adds nothing. */
  receiptKeys(input: InputOf<K>): string[];
  receipt: Receipt<K, Answer, Refusal>;
  /** How each event type its contract declares (`inputs/<kind>.ts` of @rudder/contracts) evolves the state, and its once key. */
  events: EventRulesTable<KindEventType<K>>;
  /**
   * The text the agent's input guard checks, before the lock, on the conversation's state as
   * the batch found it; null: none. Absent: the kind is never guarded. What the guard said is
   * the decision's `context.guarded`.
   */
  guarded?(state: ConversationState, input: InputOf<K>): Guarded | null;
};
