import { inputDigest, inputText, messagesOf, type InputRecord } from '@rudder/contracts';

/**
 * What is kept of an input sent before under an id, wherever it is read: an `input.accepted`'s
 * input (its kind, messages and text), an `input.rejected`'s (its kind and the digest of its
 * text: a refusal keeps no text), the companion's view of either (`CompanionInput`), or a
 * steer decision's prompt (its text, the kind being a steer's).
 */
export type StoredInput = {
  kind: string;
  messages?: readonly string[] | null;
  text?: string | null;
  digest?: string | null;
};

/**
 * Whether `input` is the input kept as `stored`, sent again: the same kind, and the same
 * messages — compared by the digest of their text when only that was kept (a refusal), else by
 * the messages, else by the text (records that kept no messages). The same input again gets the
 * same answer; another under its id is an id reused. A control (stop, retract, …) has no
 * messages: its kind says it.
 */
export function sameInput(stored: StoredInput, input: InputRecord): boolean {
  if (stored.kind !== input.type) return false;
  const messages = messagesOf(input);
  if (stored.digest !== undefined && stored.digest !== null) return sameText(stored, inputText(messages));
  if (stored.messages !== undefined && stored.messages !== null && stored.messages.length > 0) return sameList(stored.messages, messages);
  if (stored.text !== undefined && stored.text !== null) return stored.text === inputText(messages);
  return true;
}

/**
 * Whether a refused input is this text: a refusal keeps only its text's digest (`input.rejected`
 * version 2, and the companion's view of it), or, from before that version, the text itself.
 */
export function sameText(refused: { digest?: string | null; text?: string | null }, text: string): boolean {
  if (refused.digest !== undefined && refused.digest !== null) return refused.digest === inputDigest(text);
  return refused.text === text;
}

/** The same messages, in the same order. */
export const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((text, i) => text === b[i]);
