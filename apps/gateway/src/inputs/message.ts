import { randomUUID } from 'node:crypto';
import type { Rejection } from '@rudder/contracts';
import type { z } from 'zod';
import { GatewayError } from '../errors/gateway-error';
import type { ConversationAccess } from '../companion/conversation-access';
import { checkTextLength, clientIdOf, parseEdge, requireJsonBody } from '../http/edge';
import type { Decisions } from '../writes/decisions';
import type { Sender, Write } from '../writes/submit';

/**
 * What a chat and a steer share: a user's text under the client's id (body `id` or
 * `Idempotency-Key`), checked alike — a steered message passes the same input checks as a chat —
 * and answered alike when the worker refuses it or does not decide in time.
 */

/** A chat or a steer as its controller hands it over. */
export type MessageRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body. */
  body: unknown;
  /** The `Idempotency-Key` header, unvalidated. */
  idempotencyKey: string | undefined;
};

/** How a chat's or a steer's body is read: its schema, its name in errors, and its texts with their body paths. */
export type MessageBody<B> = { schema: z.ZodType<B>; what: string; texts(body: B): (readonly [path: string, text: string])[] };

/**
 * The checks of a chat or a steer, in order, before anything is asked of anyone but the access
 * rule: a JSON body its schema takes (400), each text within `maxChars` characters (413), one
 * client id (400 when the body's and the header's differ), write access (403). Answers the body
 * and who sends it under which id: the client's, or a fresh one.
 */
export async function admitMessage<B extends { id?: string }>(
  request: MessageRequest,
  read: MessageBody<B>,
  maxChars: number,
  access: ConversationAccess,
): Promise<{ body: B; sender: Sender; idFromClient: boolean }> {
  requireJsonBody(request.body);
  const body = parseEdge(read.schema, request.body, read.what);
  for (const [path, text] of read.texts(body)) checkTextLength(text, path, maxChars);
  const clientId = clientIdOf(body.id, request.idempotencyKey);
  await access.mayWrite(request.key, request.subject);
  return { body, sender: { id: clientId ?? randomUUID(), key: request.key, subject: request.subject }, idFromClient: clientId !== undefined };
}

/**
 * How a chat or a steer is answered when the worker refuses it (`Decisions.rejected`: 409, 412,
 * 429 …) and when its decision does not come in time (503: it was sent, and the same id again
 * gets its answer without sending it twice).
 */
export function messageAnswers<K extends 'chat' | 'steer'>(kind: K, decisions: Decisions): Pick<Write<K, never>, 'refused' | 'late'> {
  const refused = (rejection: Rejection, input: { id: string; conversation: string }) => decisions.rejected(input.conversation, { id: input.id, kind }, rejection);
  const late = ({ id }: { id: string }, seconds: number) =>
    new GatewayError(
      'unavailable',
      `${kind} ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
        `retry with the same id (${id}) to get its answer: it will not be sent twice`,
      { id },
    );
  return { refused, late };
}
