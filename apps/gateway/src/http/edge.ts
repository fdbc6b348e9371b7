import { ConversationKey, InputId, isFiringInputId, isScheduleCallInputId } from '@rudder/contracts';
import type { z } from 'zod';
import { GatewayError, badInput } from '../errors/gateway-error';
import { isDotSegment } from '../hostile-input/request-checks';

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
export const conversationKeyOf = (raw: string): string => {
  const key = parseEdge(ConversationKey, raw, 'conversation key');
  if (isDotSegment(key)) throw new GatewayError('bad_request', 'bad conversation key: it may not be or hold a "." or ".." segment');
  return key;
};

/** A route whose input is a JSON object refuses a request without one (the parser leaves no body). */
export function requireJsonBody(body: unknown): void {
  if (body === undefined) {
    throw new GatewayError('bad_request', 'send a JSON object body with Content-Type: application/json');
  }
}

/**
 * 413 `text_too_long` for a user text longer than `max` characters (code points, counted
 * after the schema trimmed it), naming the body path, its length and the limit. Chat and
 * steer share it: a steered message passes the same input checks as a chat.
 */
export function checkTextLength(text: string, path: string, max: number): void {
  const length = [...text].length;
  if (length > max) {
    throw new GatewayError('text_too_long', `${path} has ${length} characters; at most ${max} are accepted`, { path, length, max });
  }
}

/** The client's input id: from the body or the `Idempotency-Key` header; both given must agree. */
export function clientIdOf(bodyId: string | undefined, header: string | undefined): string | undefined {
  const fromHeader = header === undefined ? undefined : parseEdge(InputId, header, 'Idempotency-Key header');
  // An id is also a path segment (`/inputs/{id}`), where `.` and `..` are path tricks (see hostile-input/).
  if (bodyId !== undefined && isDotSegment(bodyId)) throw new GatewayError('bad_request', 'bad id: an id may not be or hold a "." or ".." segment');
  if (bodyId !== undefined && fromHeader !== undefined && bodyId !== fromHeader) {
    throw new GatewayError('bad_request', 'the body id and the Idempotency-Key header differ; send one id');
  }
  const id = bodyId ?? fromHeader;
  // The worker makes a schedule's firings under ids of this form: a client's would take one's place.
  if (id !== undefined && isFiringInputId(id)) throw new GatewayError('bad_request', 'bad id: an id may not end in :fired:<digits> (the ids of schedules\' firings)');
  // And the schedule tool's calls under ids of this form: a client's would take a call's schedule id before the call is made.
  if (id !== undefined && isScheduleCallInputId(id)) throw new GatewayError('bad_request', 'bad id: an id may not end in :call:<16 hex digits> or :call:<16 hex digits>:rolled-back (the ids of the schedule tool\'s calls)');
  return id;
}
