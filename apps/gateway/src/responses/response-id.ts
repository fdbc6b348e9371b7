import { ConversationKey, InputId } from '@rudder/contracts';

/**
 * A response's id is its input's: the conversation key and the input id, so it is known as
 * soon as the input has an id (stable while the input waits, the same on every read and on
 * every gateway), and any gateway finds the response from it alone — the door keeps nothing.
 * `resp_` and the two as base64url of a JSON pair: only letters, digits, `-` and `_`.
 */
export function responseIdOf(key: string, input: string): string {
  return `resp_${Buffer.from(JSON.stringify([key, input])).toString('base64url')}`;
}

/** The conversation key and input id of a response id, or null when it is not one the door made. */
export function parseResponseId(id: string): { key: string; input: string } | null {
  if (!/^resp_[A-Za-z0-9_-]{1,1400}$/.test(id)) return null;
  try {
    const pair: unknown = JSON.parse(Buffer.from(id.slice(5), 'base64url').toString('utf8'));
    if (!Array.isArray(pair) || pair.length !== 2) return null;
    const key = ConversationKey.safeParse(pair[0]);
    const input = InputId.safeParse(pair[1]);
    return key.success && input.success ? { key: key.data, input: input.data } : null;
  } catch {
    return null;
  }
}
