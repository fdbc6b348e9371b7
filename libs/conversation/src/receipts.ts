import { inputIdsNamedBy, type DomainEvent, type EventType, type InputKind, type InputRecord } from '@rudder/contracts';
import { rulesOf, type InputOf, type OutcomeOf, type Reading, type ReceiptAnswers, type ReceiptRefusals } from './inputs';

/**
 * The receipts: for each input kind, the events that answer it and what each says of it
 * (`receipt` of its rules in `inputs/<kind>.ts`), found by the ids the events answer
 * (`INPUT_IDS_NAMED` of @rudder/contracts). The worker's decisions make them (`decideInputs`:
 * each decision on an input holds one of its settling events), the gateway waits for them (one
 * per request it sends) and finds them among recent events by the ids they name.
 */

/** What an event says of an input of kind `K` (`OutcomeOf`): its answer, its refusal, an id reused, or a failed guard. */
export type Outcome<K extends InputKind> = OutcomeOf<ReceiptAnswers[K], ReceiptRefusals[K]>;

/** The reading of `type` for inputs of `kind`, for code generic over kinds (a reading's `read` takes its own event type's data). */
const readingOf = <K extends InputKind>(kind: K, type: EventType): Reading<K, EventType, ReceiptAnswers[K], ReceiptRefusals[K]> | undefined =>
  rulesOf(kind).receipt[type] as Reading<K, EventType, ReceiptAnswers[K], ReceiptRefusals[K]> | undefined;

/**
 * What `event` says of `input`, when it is one of its receipts naming it; undefined otherwise.
 * `live`: the event came after the input was sent (else it is one from before: a failed guard
 * then answered an earlier send, not this one).
 */
export function receiptOf<K extends InputKind>(input: InputOf<K>, event: DomainEvent, live?: boolean): Outcome<K> | undefined;
export function receiptOf(input: InputRecord, event: DomainEvent, live?: boolean): Outcome<InputKind> | undefined;
export function receiptOf<K extends InputKind>(input: InputOf<K>, event: DomainEvent, live = true): Outcome<K> | undefined {
  const reading = readingOf(input.type as K, event.type);
  if (reading === undefined || (reading.liveOnly && !live)) return undefined;
  if (!inputIdsNamedBy(event).answers.includes(reading.of?.(input) ?? input.id)) return undefined;
  return reading.read(event.data, input);
}

/** The ids an input's receipts name: its own, and for a promotion its target's. */
export function receiptIdsOf(input: InputRecord): string[] {
  const readings = Object.values(rulesOf(input.type).receipt) as Reading<InputKind, EventType, unknown, unknown>[];
  return [...new Set(readings.map((reading) => reading.of?.(input) ?? input.id))];
}

/** The ids of the inputs `event` may be a receipt of (the ids a request waiting for it sent), each once. */
export const receiptIds = (event: { type: string; data: unknown }): string[] => [...new Set(inputIdsNamedBy(event).answers)];

/** The event types that settle an input of this kind (its receipt keys are their once keys). */
export const settlingTypes = (kind: InputKind): EventType[] =>
  (Object.entries(rulesOf(kind).receipt) as [EventType, Reading<InputKind, EventType, unknown, unknown>][]).filter(([, reading]) => reading.settles).map(([type]) => type);

/**
 * The once keys of the events that settle an input — any one of them stored means the input
 * was handled before (redelivered, or sent again) and adds nothing. Each possible decision on
 * the input holds an event with one of these keys (the decider's specs check it for every kind
 * of decision it makes).
 */
export const receiptKeys = (input: InputRecord): string[] => rulesOf(input.type).receiptKeys(input);
