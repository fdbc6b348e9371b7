import type { InputIdsNamed } from './event-parts';
import { NAMES_NONE } from './event-parts';
import { EVENT_CONTRACTS, type EventDataOf, type EventType } from './events';

export type { InputIdsNamed } from './event-parts';

/**
 * What each event type names (`InputIdsNamed`), as its contract declares it beside the schema
 * of its data (`events.ts`, `inputs/<kind>.ts`): every reader of input ids follows.
 */
export const INPUT_IDS_NAMED = Object.fromEntries(Object.entries(EVENT_CONTRACTS).map(([type, contract]) => [type, contract.names])) as {
  readonly [T in EventType]: (data: EventDataOf<T>) => InputIdsNamed;
};

/** What `event` names (`INPUT_IDS_NAMED`); nothing for a type this contract does not know (a newer worker's). */
export function inputIdsNamedBy(event: { type: string; data: unknown }): InputIdsNamed {
  if (!Object.hasOwn(INPUT_IDS_NAMED, event.type)) return NAMES_NONE;
  // The table is typed by event type; an event's data is its own type's.
  const named = INPUT_IDS_NAMED[event.type as EventType] as (data: unknown) => InputIdsNamed;
  return named(event.data);
}

/** Every input id `event` names, about or answered, each once: the ids a request waiting on it may have sent. */
export function inputIdsOf(event: { type: string; data: unknown }): string[] {
  const { about, answers } = inputIdsNamedBy(event);
  return [...new Set([...about, ...answers])];
}
