import {
  ChatAcceptedAnswer,
  ChatBody,
  ConversationKey,
  ErrorAnswer,
  ErrorStatus,
  GrantBody,
  GrantDecisionAnswer,
  HealthAnswer,
  InputId,
  RetractedAnswer,
  StatusAnswer,
  SteerBody,
  SteerDecisionAnswer,
  StopBody,
  STREAM_ID_PATTERN,
  StopDecisionAnswer,
  StreamMessage,
  StreamTokenAnswer,
  Subject,
  TranscriptAnswer,
  TurnAnswer,
  streamEventTypes,
  type ErrorCode,
} from '@rudder/contracts';
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponsesObject } from 'zod-openapi';

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the zod contracts of
 * libs/contracts (bodies: `ChatBody`…; answers: `answers.ts`). Routes are listed here once;
 * openapi.int.spec.ts checks them against the routes the gateway serves.
 */
type AnyCode = ErrorCode | 'rate_limited' | 'internal';
const statusOf = (code: AnyCode): number => (code === 'rate_limited' ? 429 : code === 'internal' ? 500 : ErrorStatus[code]);

const key = ConversationKey.meta({ description: 'The conversation key, URL-encoded (e.g. `user-42%2Ftrip`).' });
const conversation = z.object({ key });
const positionHeader = z.string().regex(/^\d+$/).meta({
  description: 'The log position of the decision this write answered; pass it as `Rudder-Min-Position` to read it through another gateway.',
});
const readHeaders = z.object({
  'rudder-min-position': z.string().regex(/^\d{1,15}$/).optional().meta({
    description: 'Wait (at most 5 s, then 503) until the view reflects this position (a `Rudder-Position` a write answered).',
  }),
});
const idempotencyHeaders = z.object({
  'idempotency-key': InputId.optional().meta({ description: "The input's id, when the body has none; the same id again is the same input." }),
});

const errorResponses = (codes: AnyCode[]): ZodOpenApiResponsesObject => {
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

const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
const write = (status: 200 | 201 | 202, description: string, schema: z.ZodType, codes: AnyCode[]): ZodOpenApiResponsesObject => ({
  [String(status)]: { description, headers: z.object({ 'rudder-position': positionHeader }), ...json(schema) },
  ...errorResponses(['forbidden', 'rate_limited', 'unavailable', ...codes]),
});
const read = (description: string, schema: z.ZodType, codes: AnyCode[] = []): ZodOpenApiResponsesObject => ({
  '200': { description, ...json(schema) },
  ...errorResponses(['forbidden', 'unavailable', ...codes]),
});

const op = (summary: string, operation: Omit<ZodOpenApiOperationObject, 'summary'>): ZodOpenApiOperationObject => ({ summary, ...operation });
const noBody = { description: 'no body, or `{}`', required: false, ...json(z.object({}).strict()) };

const paths: ZodOpenApiPathsObject = {
  '/v1/conversations/{key}/chat': {
    post: op('Enqueue a follow-up (`text`, or `messages` answered by one reply)', {
      operationId: 'chat',
      requestParams: { path: conversation, header: idempotencyHeaders },
      requestBody: { required: true, ...json(ChatBody.meta({ id: 'ChatBody' })) },
      responses: write(202, 'accepted by the worker', ChatAcceptedAnswer, [
        'unknown_agent',
        'conflict',
        'agent_mismatch',
        'precondition_failed',
        'text_too_long',
        'id_reused',
        'refused',
        'queue_full',
        'guard_failed',
      ]),
    }),
  },
  '/v1/conversations/{key}/steer': {
    post: op('Steer the running turn', {
      operationId: 'steer',
      requestParams: { path: conversation, header: idempotencyHeaders },
      requestBody: { required: true, ...json(SteerBody.meta({ id: 'SteerBody' })) },
      responses: write(200, 'the worker decided where the message goes', SteerDecisionAnswer, [
        'precondition_failed',
        'text_too_long',
        'id_reused',
        'refused',
        'queue_full',
        'guard_failed',
      ]),
    }),
  },
  '/v1/conversations/{key}/stop': {
    post: op('Stop the running turn (that turn only, when `turn` is named)', {
      operationId: 'stop',
      requestParams: { path: conversation },
      requestBody: { required: false, ...json(StopBody.meta({ id: 'StopBody' })) },
      responses: write(202, 'the worker decided', StopDecisionAnswer, []),
    }),
  },
  '/v1/conversations/{key}': {
    get: op('Status: the running turn, pending steers and follow-ups, agent (and grants, for the owner)', {
      operationId: 'status',
      requestParams: { path: conversation, header: readHeaders },
      responses: read('the status', StatusAnswer, ['not_found']),
    }),
  },
  '/v1/conversations/{key}/messages': {
    get: op('The transcript, oldest first', {
      operationId: 'messages',
      requestParams: {
        path: conversation,
        header: readHeaders,
        query: z.object({ after: z.string().optional().meta({ description: 'the `next` cursor of the previous page' }), limit: z.string().regex(/^\d+$/).optional().meta({ description: '1-200' }) }),
      },
      responses: read('one page', TranscriptAnswer, ['not_found']),
    }),
  },
  '/v1/conversations/{key}/turns/{turn}': {
    get: op('One turn', {
      operationId: 'turn',
      requestParams: { path: z.object({ key, turn: z.string().min(1).max(200) }), header: readHeaders },
      responses: read('the turn', TurnAnswer, ['not_found']),
    }),
  },
  '/v1/conversations/{key}/turns': {
    get: op('The turn that answered or took an input', {
      operationId: 'turnOf',
      requestParams: { path: conversation, header: readHeaders, query: z.object({ input: InputId }) },
      responses: read('the turn', TurnAnswer, ['not_found']),
    }),
  },
  '/v1/conversations/{key}/events': {
    get: op('Server-Sent Events of the conversation, resumable with `Last-Event-ID`', {
      operationId: 'events',
      description: `Event types: ${streamEventTypes().map((t) => `\`${t}\``).join(', ')}. Stored events carry their position as SSE id; \`token\` events carry \`<position>.<offset>\` (the last position sent before it, its offset on agent.tokens), and a reconnect with either kind of id replays the events and the tokens missed (tokens are kept until their turn ended plus 60 s). Without \`Last-Event-ID\` (or \`?after=\`) the stream starts live. A \`: keep-alive\` comment comes every 15 s. A stream may be opened on a key nobody owns yet; it carries an event only to a subject who may read the conversation at that event's position, and ends when its subject's read access is revoked.`,
      requestParams: {
        path: conversation,
        header: z.object({ 'last-event-id': z.string().regex(STREAM_ID_PATTERN).optional().meta({ description: 'resume after this event (a position) or token (<position>.<offset>)' }) }),
        query: z.object({
          after: z.string().regex(STREAM_ID_PATTERN).optional().meta({ description: 'as Last-Event-ID, for clients that cannot set headers (the header wins)' }),
          access_token: z.string().optional().meta({ description: 'a stream token (POST …/stream-tokens), for EventSource' }),
        }),
      },
      responses: {
        '200': { description: 'the stream', content: { 'text/event-stream': { schema: StreamMessage } } },
        ...errorResponses(['forbidden', 'rate_limited', 'unavailable']),
      },
    }),
  },
  '/v1/conversations/{key}/inputs/{id}': {
    delete: op('Retract a pending input', {
      operationId: 'retract',
      requestParams: { path: z.object({ key, id: InputId }) },
      responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
    }),
  },
  '/v1/conversations/{key}/inputs': {
    delete: op('Retract the latest pending input of a queue', {
      operationId: 'retractLatest',
      requestParams: { path: conversation, query: z.object({ latest: z.enum(['chat', 'steer']) }) },
      responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
    }),
  },
  '/v1/conversations/{key}/inputs/{id}/promote': {
    post: op('Turn a pending follow-up into a steer', {
      operationId: 'promote',
      requestParams: { path: z.object({ key, id: InputId }) },
      requestBody: noBody,
      responses: write(200, 'the steer decision', SteerDecisionAnswer, ['conflict', 'not_found']),
    }),
  },
  '/v1/conversations/{key}/stream-tokens': {
    post: op("A short-lived token that opens this conversation's event stream only", {
      operationId: 'streamToken',
      requestParams: { path: conversation },
      requestBody: noBody,
      responses: {
        '201': { description: 'issued', ...json(StreamTokenAnswer) },
        ...errorResponses(['forbidden', 'unavailable']),
      },
    }),
  },
  '/v1/conversations/{key}/grants/{subject}': {
    put: op('The owner grants a subject read or write access', {
      operationId: 'grant',
      requestParams: { path: z.object({ key, subject: Subject }) },
      requestBody: { required: true, ...json(GrantBody.meta({ id: 'GrantBody' })) },
      responses: write(200, 'granted', GrantDecisionAnswer, ['not_found', 'conflict']),
    }),
    delete: op('The owner revokes a grant', {
      operationId: 'revoke',
      requestParams: { path: z.object({ key, subject: Subject }) },
      responses: write(200, 'revoked (`access: null`)', GrantDecisionAnswer, ['not_found', 'conflict']),
    }),
  },
  '/healthz': {
    get: op('200 once Kafka and the database answer', {
      operationId: 'health',
      security: [],
      responses: { '200': { description: 'healthy', ...json(HealthAnswer) }, '503': { description: '`unavailable`, `details` names what is down', ...json(ErrorAnswer) } },
    }),
  },
  '/metrics': {
    get: op('Prometheus metrics of this gateway', {
      operationId: 'metrics',
      security: [],
      responses: { '200': { description: 'the text exposition format', content: { 'text/plain': { schema: z.string() } } } },
    }),
  },
  '/openapi.json': {
    get: op('This document', {
      operationId: 'openapi',
      security: [],
      responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: z.object({}).passthrough() } } } },
    }),
  },
  '/docs': {
    get: op('This document as a page', {
      operationId: 'docs',
      security: [],
      responses: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
    }),
  },
  '/': {
    get: op('The web chat (a page; its calls to the API take the token typed into it)', {
      operationId: 'webChat',
      security: [],
      responses: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
    }),
  },
  '/app.js': {
    get: op("The web chat's script (an ES module on @rudder/client)", {
      operationId: 'webChatScript',
      security: [],
      responses: { '200': { description: 'JavaScript', content: { 'text/javascript': { schema: z.string() } } } },
    }),
  },
};

let built: ReturnType<typeof createDocument> | undefined;

export function openApiDocument(): ReturnType<typeof createDocument> {
  return (built ??= createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Rudder HTTP API',
      version: '1',
      description:
        'Steerable AI-agent conversations. Every route but /healthz, /metrics, /openapi.json, /docs and the web chat (/, /app.js) takes `Authorization: Bearer <token>`. Errors are `{error: {code, message, details?}}` with stable codes. See docs/api.md.',
    },
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  }));
}
