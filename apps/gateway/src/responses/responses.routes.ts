import { CreateResponseBody, InputId, ProtocolErrorAnswer, ResponseAnswer } from '@rudder/contracts';
import { z } from 'zod';
import type { ZodOpenApiResponsesObject } from 'zod-openapi';
import { json, noBody, statusOf, type AnyCode } from '../http/openapi';
import { route, type Routes } from '../http/route';

/** A route of the Responses door: its answer (JSON, or the protocol's event stream) and its errors in the protocol's shape. */
const protocol = (description: string, codes: AnyCode[]): ZodOpenApiResponsesObject => {
  const statuses = [...new Set(['bad_request', 'unauthorized', ...codes].map((code) => statusOf(code as AnyCode)))];
  return {
    '200': { description, content: { 'application/json': { schema: ResponseAnswer }, 'text/event-stream': { schema: z.string() } } },
    ...Object.fromEntries(
      statuses.map((status) => [
        String(status),
        {
          description: status === 409 ? 'error (`x-should-retry: false`)' : 'error',
          ...(status === 409 ? { headers: z.object({ 'x-should-retry': z.literal('false') }) } : {}),
          content: { 'application/json': { schema: ProtocolErrorAnswer } },
        },
      ]),
    ),
  };
};

export const RESPONSES_ROUTES = {
  createResponse: route('post', '/v1/responses', 'OpenAI Responses protocol: create a response (a turn; `model` names the agent)', {
    description:
      'The `openai` client\'s `responses.create` and `responses.stream` (docs/responses.md). `previous_response_id` or `conversation` (a conversation key) continues a conversation; a create on a response still running queues behind it while it winds down and completes, and one on a response still queued queues behind it, winding nothing down; with neither, it opens a conversation of its subject no other subject can open. `stream: true` answers the protocol\'s event stream (`text/event-stream`, from `response.created` to one of `response.completed`, `response.incomplete`, `response.failed`), with `background: true` too; `background: true` alone answers at once. Rudder\'s tools appear as `mcp_call` items. `Idempotency-Key` makes a retried create the same response; once the input is produced, no answer is one the client retries by itself (`x-should-retry: false`). Errors are `{error: {message, type, param, code}}`.',
    requestParams: { header: z.object({ 'idempotency-key': InputId.optional().meta({ description: 'The input\'s id: the same key again is the same response.' }) }) },
    requestBody: { required: true, ...json(CreateResponseBody.meta({ id: 'CreateResponseBody' })) },
    responses: protocol('the response', ['unknown_agent', 'forbidden', 'conflict', 'text_too_long', 'id_reused', 'refused', 'queue_full', 'rate_limited', 'guard_failed', 'unavailable']),
  }),
  // A read of the response's conversation, counted against its subject's read rate.
  retrieveResponse: {
    ...route('get', '/v1/responses/{id}', 'OpenAI Responses protocol: a response, or its stream replayed (`?stream=true&starting_after=N`)', {
      requestParams: {
        path: z.object({ id: z.string().meta({ description: 'a response id (`resp_…`)' }) }),
        query: z.object({
          stream: z.enum(['true', 'false']).optional().meta({ description: 'replay the response\'s stream from its start (live once it catches up)' }),
          starting_after: z.string().regex(/^\d+$/).optional().meta({ description: 'leave out the events up to this sequence number' }),
        }),
      },
      responses: protocol('the response', ['forbidden', 'not_found', 'rate_limited', 'unavailable']),
    }),
    readsConversation: true,
  },
  cancelResponse: route('post', '/v1/responses/{id}/cancel', 'OpenAI Responses protocol: cancel a response (its turn stopped, or its waiting input taken back)', {
    description: 'Answered once the response ended: `cancelled`, or as it ended before (cancelling is idempotent). Needs `write`, as a stop does.',
    requestParams: { path: z.object({ id: z.string().meta({ description: 'a response id (`resp_…`)' }) }) },
    requestBody: noBody,
    responses: protocol('the response', ['forbidden', 'not_found', 'rate_limited', 'unavailable']),
  }),
} satisfies Routes;
