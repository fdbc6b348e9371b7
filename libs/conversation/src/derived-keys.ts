import { createHash } from 'node:crypto';

/** The keys the Responses door derives: no other door opens a conversation under this prefix. */
export const DERIVED_KEY_PREFIX = 'responses/';

/**
 * The key of the conversation a Responses create without a conversation opens for `subject`:
 * the prefix and a sha256 of the subject and a nonce (the create's `Idempotency-Key`, so a
 * retried create finds the conversation it opened; else a fresh one). Anyone can compute it,
 * so the key alone proves nothing: the worker opens such a conversation only for a chat whose
 * subject and nonce (`derivedFrom`) derive it, so no subject can open another's.
 */
export function derivedConversationKey(subject: string, nonce: string): string {
  return `${DERIVED_KEY_PREFIX}${createHash('sha256').update(`${subject}\n${nonce}`).digest('hex').slice(0, 40)}`;
}

/**
 * Why a chat or steer may not write to a derived key's conversation, or null when it may: a
 * derived conversation is opened only by the chat it was derived for, and a create meant to
 * open one (`derivedFrom`) never joins a conversation another subject opened.
 */
export function derivedKeyRefusal(
  owner: string | null,
  input: { conversation: string; subject: string; derivedFrom?: string | undefined },
): string | null {
  const { conversation, subject, derivedFrom } = input;
  if (derivedFrom !== undefined) {
    if (derivedConversationKey(subject, derivedFrom) !== conversation) return `${conversation} is not the conversation key derived for ${subject}`;
    if (owner !== null && owner !== subject) return `${conversation} was opened by another subject: a create opens a conversation of its own subject only`;
    return null;
  }
  if (owner === null && conversation.startsWith(DERIVED_KEY_PREFIX)) {
    return `conversations under ${DERIVED_KEY_PREFIX} are opened by the Responses door only, each for the subject it derives the key for`;
  }
  return null;
}
