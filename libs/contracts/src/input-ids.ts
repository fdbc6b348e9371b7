import type { EventDataOf, EventType } from './events';

/**
 * The input ids an event names, in the two ways readers need them:
 * - `about`: the inputs whose standing it records — accepted, refused, decided as a steer,
 *   taken, delivered, taken back or dropped, a turn's prompt, the steers a turn took. A read
 *   model keeping a row per input reads these rows (the companion's fold).
 * - `answers`: the inputs it is the decision on — a receipt of the request that sent them (a
 *   chat's acceptance or refusal, a stop's request, a retraction's, a grant's, a promotion's
 *   refusal, a person's decision on an approval). What waits for an input's answer finds it
 *   among the events that name its id here (the receipts of @rudder/conversation, the gateway).
 * An id an event names in no such way (a refusal's target, the stop that dropped an input) is in neither.
 */
export type InputIdsNamed = { about: readonly string[]; answers: readonly string[] };

const NONE: InputIdsNamed = { about: [], answers: [] };
const aboutAndAnswers = (id: string): InputIdsNamed => ({ about: [id], answers: [id] });
const answers = (id: string): InputIdsNamed => ({ about: [], answers: [id] });
const about = (...ids: string[]): InputIdsNamed => ({ about: ids, answers: [] });

/**
 * What each event type names (`InputIdsNamed`), declared beside the contract of its data: a new
 * event type says here which inputs it names, and every reader of input ids follows.
 */
export const INPUT_IDS_NAMED: { readonly [T in EventType]: (data: EventDataOf<T>) => InputIdsNamed } = {
  'conversation.opened': () => NONE,
  'input.accepted': (data) => aboutAndAnswers(data.input.id),
  'input.rejected': (data) => aboutAndAnswers(data.input.id),
  // The guard decided nothing: no standing to record, only the answer a request waits for.
  'guard.failed': (data) => answers(data.input.id),
  // A steer's decision, or a promoted follow-up's (the promotion's answer names its target).
  'steer.accepted': (data) => aboutAndAnswers(data.input.id),
  'steer.taken': (data) => about(data.input.id),
  'stop.requested': (data) => answers(data.stop),
  'stop.refused': (data) => answers(data.stop),
  'input.retracted': (data) => ({ about: [data.input.id], answers: [data.retract] }),
  'retract.refused': (data) => answers(data.retract),
  'input.discarded': (data) => about(data.input.id),
  'promote.refused': (data) => answers(data.promote),
  'access.granted': (data) => answers(data.grant),
  'grant.refused': (data) => answers(data.grant),
  'input.delivered': (data) => about(data.input.id),
  'turn.started': (data) => about(data.prompt.id),
  'turn.ended': (data) => about(...data.steered.map((s) => s.id)),
  'model.replied': () => NONE,
  'history.compacted': () => NONE,
  'tool.started': () => NONE,
  'tool.ended': () => NONE,
  'todos.updated': () => NONE,
  'approval.requested': () => NONE,
  // A decision by a timeout answers no input.
  'approval.decided': (data) => (data.input === null ? NONE : answers(data.input)),
  'approval.refused': (data) => answers(data.input),
};

/** What `event` names (`INPUT_IDS_NAMED`); nothing for a type this contract does not know (a newer worker's). */
export function inputIdsNamedBy(event: { type: string; data: unknown }): InputIdsNamed {
  if (!Object.hasOwn(INPUT_IDS_NAMED, event.type)) return NONE;
  // The table is typed by event type; an event's data is its own type's.
  const named = INPUT_IDS_NAMED[event.type as EventType] as (data: unknown) => InputIdsNamed;
  return named(event.data);
}

/** Every input id `event` names, about or answered, each once: the ids a request waiting on it may have sent. */
export function inputIdsOf(event: { type: string; data: unknown }): string[] {
  const { about, answers } = inputIdsNamedBy(event);
  return [...new Set([...about, ...answers])];
}
