import { ConversationKey } from '@rudder/contracts';
import type { z } from 'zod';
import { badInput } from './errors/gateway-error';

/**
 * Validation at the HTTP edge: every path parameter, query and body goes through a zod
 * schema before anything else looks at it; a failure is 400 with the failing paths.
 */
export function parseEdge<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw badInput(what, parsed.error);
  return parsed.data;
}

/** The `{key}` of a route, already URL-decoded by the router. */
export const conversationKeyOf = (raw: string): string => parseEdge(ConversationKey, raw, 'conversation key');
