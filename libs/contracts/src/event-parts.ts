import { z } from 'zod';
import { InputId, MessageKind } from './conversation-key';
import { sha256Hex } from './sha256';

/**
 * What the contracts of events share, wherever an event type is declared (`events.ts` for the
 * conversation's and the turn's own, `inputs/<kind>.ts` for an input kind's): the parts several
 * events' data are made of, and how an event type declares the input ids it names.
 */

/** A prompt or a steered message as a turn holds it. */
export const Prompt = z.object({ id: InputId, text: z.string() });

/** A pending input as the events that take it back, drop or change it name it. */
export const PendingInput = z.object({ id: InputId, kind: MessageKind, text: z.string() });

/**
 * What a refusal keeps of its input's text: its SHA-256 (hex, of the text's UTF-8), enough to
 * tell the same input sent again (same id, same text: the same answer) from another one under
 * the id, and nothing a spammer can grow the log with.
 */
export const inputDigest = (text: string): string => sha256Hex(text);
export const Digest = z.string().regex(/^[0-9a-f]{64}$/);

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

export const NAMES_NONE: InputIdsNamed = { about: [], answers: [] };
export const namesAboutAndAnswers = (id: string): InputIdsNamed => ({ about: [id], answers: [id] });
export const namesAnswers = (id: string): InputIdsNamed => ({ about: [], answers: [id] });
export const namesAbout = (...ids: string[]): InputIdsNamed => ({ about: ids, answers: [] });

/**
 * An event type's contract: the schema of its data, and the input ids it names — declared
 * together, so a new event type says which inputs it names where it says what it holds.
 */
export type EventContract<S extends z.ZodType = z.ZodType> = {
  readonly data: S;
  names(data: z.infer<S>): InputIdsNamed;
};
export const eventContract = <S extends z.ZodType>(data: S, names: (data: z.infer<S>) => InputIdsNamed): EventContract<S> => ({ data, names });

/** Tables of event contracts as one: an event type is declared once, by one table (refused at load otherwise). */
export function joinEventContracts<T extends Record<string, EventContract>>(tables: readonly T[]): Record<string, EventContract> {
  const joined: Record<string, EventContract> = {};
  for (const table of tables) {
    for (const [type, contract] of Object.entries(table)) {
      if (Object.hasOwn(joined, type)) throw new Error(`the event type ${type} is declared twice`);
      joined[type] = contract;
    }
  }
  return joined;
}
