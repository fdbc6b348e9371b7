import { inputDigest, inputText, type CompanionInput } from '@rudder/contracts';

/**
 * Whether an input sent again under its id is the same input: the rule of "the same id with the
 * same text is answered as the first time; with other text, or as another kind, it is another
 * input under a used id (422 `id_reused`)". Every check of it is here, in one place.
 */

/**
 * Whether a refused input is this text: a refusal keeps only its text's digest (`input.rejected`
 * version 2; the companion's view of it the same), or, from before that version (a companion not
 * upgraded yet), the text itself. The same id with the same text gets the same refusal; with
 * other text it is another input under a used id.
 */
export function refusedText(refused: { digest?: string; text?: string }, text: string): boolean {
  if (refused.digest !== undefined) return refused.digest === inputDigest(text);
  return refused.text === text;
}

/** The same chat again: a steer (or any other kind) under this id is another input. */
export function sameMessages(earlier: CompanionInput, messages: string[]): boolean {
  if (earlier.kind !== 'chat') return false;
  // A refusal keeps only the digest of the messages joined (`input.rejected`).
  if (earlier.state === 'rejected') return refusedText(earlier, inputText(messages));
  if (earlier.messages !== undefined) return sameList(earlier.messages, messages);
  return earlier.text === inputText(messages);
}

/** The same steer again: a steer with this text. A chat under the id, or other text, is another input. */
export function isSameSteer(earlier: CompanionInput, text: string): boolean {
  if (earlier.kind !== undefined && earlier.kind !== 'steer') return false;
  // A refusal keeps only the digest of its text (`input.rejected`).
  if (earlier.state === 'rejected') return refusedText(earlier, text);
  if (earlier.messages !== undefined && (earlier.messages.length !== 1 || earlier.messages[0] !== text)) return false;
  return earlier.text === undefined || earlier.text === text;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((text, i) => text === b[i]);
