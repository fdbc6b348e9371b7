import { ConversationKey, ErrorAnswer, ErrorStatus, InputId, type ErrorCode } from '@rudder/contracts';
import { z } from 'zod';
import type { ZodOpenApiResponsesObject } from 'zod-openapi';

/**
 * What route entries share of their OpenAPI operations: the conversation key, the headers of
 * reads and writes, a write's and a read's answers, and the errors by status.
 */

/** Every code a route may answer: the contract's, the edge's own `rate_limited`, and `internal` (a bug). */
export type AnyCode = ErrorCode | 'rate_limited' | 'internal';
export const statusOf = (code: AnyCode): number => (code === 'rate_limited' ? 429 : code === 'internal' ? 500 : ErrorStatus[code]);

export const key = ConversationKey.meta({ description: 'The conversation key, URL-encoded (e.g. `user-42%2Ftrip`).' });
export const conversation = z.object({ key });
const positionHeader = z.string().regex(/^\d+$/).meta({
  description: 'The log position of the decision this write answered; pass it as `Rudder-Min-Position` to read it through another gateway.',
});
export const readHeaders = z.object({
  'rudder-min-position': z.string().regex(/^\d{1,15}$/).optional().meta({
    description: 'Wait (at most 5 s, then 503) until the view reflects this position (a `Rudder-Position` a write answered).',
  }),
});
export const idempotencyHeaders = z.object({
  'idempotency-key': InputId.optional().meta({ description: "The input's id, when the body has none; the same id again is the same input." }),
});

export const errorResponses = (codes: AnyCode[]): ZodOpenApiResponsesObject => {
  const byStatus = new Map<number, AnyCode[]>();
  for (const code of ['bad_request', 'unauthorized', ...codes] as AnyCode[]) {
    const status = statusOf(code);
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, names]) => [
      String(status),
      {
        description: `error: ${names.map((n) => `\`${n}\``).join(', ')}`,
        ...(status === 429 || names.includes('guard_failed') ? { headers: z.object({ 'retry-after': z.string().meta({ description: 'seconds' }) }) } : {}),
        content: { 'application/json': { schema: ErrorAnswer } },
      },
    ]),
  );
};

export const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
export const write = (status: 200 | 201 | 202, description: string, schema: z.ZodType, codes: AnyCode[]): ZodOpenApiResponsesObject => ({
  [String(status)]: { description, headers: z.object({ 'rudder-position': positionHeader }), ...json(schema) },
  ...errorResponses(['forbidden', 'rate_limited', 'unavailable', ...codes]),
});
export const read = (description: string, schema: z.ZodType, codes: AnyCode[] = []): ZodOpenApiResponsesObject => ({
  '200': { description, ...json(schema) },
  ...errorResponses(['forbidden', 'unavailable', ...codes]),
});

export const noBody = { description: 'no body, or `{}`', required: false, ...json(z.object({}).strict()) };
