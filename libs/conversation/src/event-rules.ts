import type { DomainEvent, EventDataOf, EventType } from '@rudder/contracts';
import { CORE_EVENT_RULES } from './core-events';
import { INPUT_KINDS } from './inputs';
import { dueOf, type ConversationState } from './state';

/**
 * How one event type takes part in the conversation's stream: how it evolves the decider's
 * state, and its once key — what makes it happen at most once in its conversation, enforced
 * by the store's unique key on (conversation, once key): the conversation is opened once; an
 * input is accepted (or rejected) once and delivered once; a steer is decided once and taken
 * at most once; each control (stop, retract, promote, grant, approval) is handled once; a
 * prompt starts one turn; a step's reply and each call's start and result are stored once; a
 * turn ends once.
 */
export type EventRules<T extends EventType> = {
  evolve(state: ConversationState, data: EventDataOf<T>): ConversationState;
  onceKey(data: EventDataOf<T>): string;
};

/** The rules of some event types, by type: each of them has its own. */
export type EventRulesTable<T extends EventType> = { readonly [E in T]: EventRules<E> };

/**
 * Every event type's rules, by type: the conversation's and the turn's own (`core-events.ts`)
 * and each input kind's (its module's `events`, which the compiler asks for every event type its
 * contract declares). A type with two rules is refused at load.
 */
export const EVENT_RULES: EventRulesTable<EventType> = joinRules([CORE_EVENT_RULES, ...Object.values(INPUT_KINDS).map((kind) => kind.events)]);

export function joinRules(tables: readonly Partial<Record<EventType, EventRules<never>>>[]): EventRulesTable<EventType> {
  const joined: Partial<Record<EventType, EventRules<never>>> = {};
  for (const table of tables) {
    for (const [type, rules] of Object.entries(table) as [EventType, EventRules<never>][]) {
      if (Object.hasOwn(joined, type)) throw new Error(`the event type ${type} has two rules`);
      joined[type] = rules;
    }
  }
  return joined as EventRulesTable<EventType>;
}

/** The rules of `event`'s type, for code generic over types (an event's data is its own type's). */
function rulesOf(event: DomainEvent): EventRules<EventType> {
  const rules = Object.hasOwn(EVENT_RULES, event.type) ? (EVENT_RULES[event.type] as EventRules<EventType>) : undefined;
  if (rules === undefined) throw new Error(`unknown event ${JSON.stringify(event)}`);
  return rules;
}

/** Evolves the state by one event, applied in log order; its `dueAt` follows what it is made of. */
export const evolve = (state: ConversationState, event: DomainEvent): ConversationState => {
  const next = rulesOf(event).evolve(state, event.data);
  return { ...next, dueAt: dueOf(next) };
};

/** What makes `event` happen at most once in its conversation (its type's `onceKey`). */
export const onceKey = (event: DomainEvent): string => rulesOf(event).onceKey(event.data);
