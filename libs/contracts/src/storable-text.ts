import { z } from 'zod';

/**
 * What PostgreSQL cannot hold: U+0000 (in `text` and `jsonb` alike) and a lone surrogate
 * (`jsonb` refuses the escape JSON gives it). Every text a stranger sends is checked against
 * this at the edge (HTTP and `agent.inputs`); every text Rudder itself stores (model replies,
 * tool results) is made storable by `storableJson`.
 */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export const UNSTORABLE_TEXT_MESSAGE = 'text must not hold NUL characters (U+0000) or lone surrogates';

export const isStorableText = (text: string): boolean => !UNSTORABLE.test(text);

/** The text with each NUL and each lone surrogate replaced by U+FFFD, the replacement character. */
export const storableText = (text: string): string => text.replace(UNSTORABLE_ALL, '\ufffd');

/** A string that PostgreSQL can store as it is. */
export const StorableString = z.string().refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

/**
 * JSON of `value` that `jsonb` accepts: strings (and keys) holding NUL or a lone surrogate
 * have them replaced by U+FFFD. `JSON.stringify` writes exactly those as `\u0000` and
 * `\udXXX` escapes, so the common case costs one scan of the JSON and nothing else.
 */
export function storableJson(value: unknown): string {
  const json = JSON.stringify(value);
  // Stryker disable next-line ConditionalExpression: `false || …` tests undefined as "undefined", which holds no escape, so it returns early all the same (this also leaves out `if (false)`, which the spec's URL would kill).
  if (json === undefined || !/\\u(0000|d[89a-f])/i.test(json)) return json;
  return JSON.stringify(deepStorable(value));
}

function deepStorable(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(deepStorable);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), deepStorable(v)]));
  }
  return value;
}
