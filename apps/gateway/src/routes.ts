/**
 * The HTTP API's route table.
 */
import {
  ApprovalBody,
  ApprovalDecisionAnswer,
  ApprovalId,
  ChatAcceptedAnswer,
  ChatBody,
  ConversationKey,
  ErrorAnswer,
  ErrorStatus,
  FOLLOWUPS_DEFAULT,
  FOLLOWUPS_MAX,
  FollowupsAnswer,
  GrantBody,
  GrantDecisionAnswer,
  HealthAnswer,
  InputId,
  MessageKind,
  RecapAnswer,
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
  TodosAnswer,
  TranscriptAnswer,
  TurnAnswer,
  streamEventTypes,
  type ErrorCode,
  CreateResponseBody,
  ProtocolErrorAnswer,
  ResponseAnswer,
} from '@rudder/contracts';
import { z } from 'zod';
import { applyDecorators, HttpCode, RequestMapping, RequestMethod, UseGuards } from '@nestjs/common';
import { ReadRateGuard } from './limits/read-rate.guard';
import type { ZodOpenApiOperationObject, ZodOpenApiResponsesObject } from 'zod-openapi';

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

const noBody = { description: 'no body, or `{}`', required: false, ...json(z.object({}).strict()) };

type Method = 'get' | 'post' | 'put' | 'delete';

/** One route: its method, its path (OpenAPI's `{param}` form) and its operation (params, body, answers, errors, access). */
export type RouteSpec = { method: Method; path: string; operation: Omit<ZodOpenApiOperationObject, 'operationId'> };

const route = (method: Method, path: string, summary: string, operation: Omit<ZodOpenApiOperationObject, 'summary' | 'operationId'>): RouteSpec => ({
  method,
  path,
  operation: { summary, ...operation },
});

/**
 * The gateway's routes, each listed once, by operation id: the controllers are routed by it
 * (`@Route`: method, path and success status) and the OpenAPI document is generated from it
 * (openapi/document.ts). The contracts' zod schemas give the bodies and answers (libs/contracts:
 * `ChatBody`…, `answers.ts`); `security: []` marks a route open to anyone, the others take a
 * bearer token; a write answers `Rudder-Position`.
 */
export const ROUTES = {
  chat: route('post', '/v1/conversations/{key}/chat', 'Enqueue a follow-up (`text`, or `messages` answered by one reply)', {
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
  steer: route('post', '/v1/conversations/{key}/steer', 'Steer the running turn', {
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
  stop: route('post', '/v1/conversations/{key}/stop', 'Stop the running turn (that turn only, when `turn` is named); `graceful: true` asks it to wind down', {
    requestParams: { path: conversation },
    requestBody: { required: false, ...json(StopBody.meta({ id: 'StopBody' })) },
    responses: write(202, 'the worker decided', StopDecisionAnswer, []),
  }),
  status: route('get', '/v1/conversations/{key}', 'Status: the running turn, pending steers and follow-ups, agent (and grants, for the owner)', {
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the status', StatusAnswer, ['not_found']),
  }),
  messages: route('get', '/v1/conversations/{key}/messages', 'The transcript, oldest first', {
    requestParams: {
      path: conversation,
      header: readHeaders,
      query: z.object({ after: z.string().optional().meta({ description: 'the `next` cursor of the previous page' }), limit: z.string().regex(/^\d+$/).optional().meta({ description: '1-200' }) }),
    },
    responses: read('one page', TranscriptAnswer, ['not_found']),
  }),
  turn: route('get', '/v1/conversations/{key}/turns/{turn}', 'One turn', {
    requestParams: { path: z.object({ key, turn: z.string().min(1).max(200) }), header: readHeaders },
    responses: read('the turn', TurnAnswer, ['not_found']),
  }),
  turnOf: route('get', '/v1/conversations/{key}/turns', 'The turn that answered or took an input', {
    requestParams: { path: conversation, header: readHeaders, query: z.object({ input: InputId }) },
    responses: read('the turn', TurnAnswer, ['not_found']),
  }),
  followups: route('get', '/v1/conversations/{key}/followups', "Short next messages in the user's voice, for buttons under the last answer", {
    description:
      "Made from the transcript up to the conversation's last ended turn by a model request of their own, outside every turn, and cached for that turn (every gateway shares it). A clicked one is sent as an ordinary chat; nothing tells the agent it was suggested. Empty (200) when no turn has ended yet, or on any failure to make them (the model's error, 429, timeout, an unreadable answer), which is not cached. Needs `read`.",
    requestParams: {
      path: conversation,
      header: readHeaders,
      query: z.object({ n: z.string().regex(/^\d+$/).optional().meta({ description: `how many, 1-${FOLLOWUPS_MAX} (default ${FOLLOWUPS_DEFAULT})` }) }),
    },
    responses: read('at most `n` suggestions', FollowupsAnswer, ['not_found', 'rate_limited']),
  }),
  todos: route('get', '/v1/conversations/{key}/todos', "The agent's plan: a checklist its model keeps with the built-in `todos` tool", {
    description:
      "Items in order, each `{n, text, status}` (`pending`, `in_progress`, `done`); `n` is stable for the conversation's life and never used again once deleted. Every model request of the agent carries the plan right after its instructions. Empty when the agent keeps none. The stream carries each change as `todos.updated` (the whole list); follow it after `position`. Needs `read`.",
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the plan', TodosAnswer, ['not_found']),
  }),
  recap: route('get', '/v1/conversations/{key}/recap', 'Two or three sentences on where the conversation stood, for a person returning', {
    description:
      "Made from the transcript up to the conversation's last ended turn by a model request of its own, outside every turn, cached for that turn, and never shown to the agent. Empty (200) when no turn has ended yet, or on any failure to make it, which is not cached. Needs `read`.",
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the recap', RecapAnswer, ['not_found', 'rate_limited']),
  }),
  events: route('get', '/v1/conversations/{key}/events', 'Server-Sent Events of the conversation, resumable with `Last-Event-ID`', {
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
  retract: route('delete', '/v1/conversations/{key}/inputs/{id}', 'Retract a pending input', {
    requestParams: { path: z.object({ key, id: InputId }) },
    responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
  }),
  retractLatest: route('delete', '/v1/conversations/{key}/inputs', 'Retract the latest pending input of a queue', {
    requestParams: { path: conversation, query: z.object({ latest: MessageKind }) },
    responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
  }),
  promote: route('post', '/v1/conversations/{key}/inputs/{id}/promote', 'Turn a pending follow-up into a steer', {
    requestParams: { path: z.object({ key, id: InputId }) },
    requestBody: noBody,
    responses: write(200, 'the steer decision', SteerDecisionAnswer, ['conflict', 'not_found']),
  }),
  decideApproval: route('post', '/v1/conversations/{key}/approvals/{approvalId}', 'Approve or deny a tool call waiting for approval', {
    description:
      "A call whose tool needs approval waits (its `approval.requested` event, the status's `awaiting`) and its turn parks until it is decided. `approve` runs it — with `arguments` (a JSON object its tool's schema must accept, else 422 `invalid_arguments`) when given, and its result tells the model so; `deny` gives it a result the model reads (`denied by the user: <reason>`). Needs write access. Final: the same decision (with the same arguments) again answers the same, any other 409; a call closed unrun by its turn's end is 409; an unknown approval 404.",
    requestParams: { path: z.object({ key, approvalId: ApprovalId }) },
    requestBody: { required: true, ...json(ApprovalBody.meta({ id: 'ApprovalBody' })) },
    responses: write(200, 'decided', ApprovalDecisionAnswer, ['conflict', 'not_found', 'invalid_arguments', 'text_too_long']),
  }),
  streamToken: route('post', '/v1/conversations/{key}/stream-tokens', "A short-lived token that opens this conversation's event stream only", {
    requestParams: { path: conversation },
    requestBody: noBody,
    responses: {
      '201': { description: 'issued', ...json(StreamTokenAnswer) },
      ...errorResponses(['forbidden', 'unavailable']),
    },
  }),
  grant: route('put', '/v1/conversations/{key}/grants/{subject}', 'The owner grants a subject read or write access', {
    requestParams: { path: z.object({ key, subject: Subject }) },
    requestBody: { required: true, ...json(GrantBody.meta({ id: 'GrantBody' })) },
    responses: write(200, 'granted', GrantDecisionAnswer, ['not_found', 'conflict']),
  }),
  revoke: route('delete', '/v1/conversations/{key}/grants/{subject}', 'The owner revokes a grant', {
    requestParams: { path: z.object({ key, subject: Subject }) },
    responses: write(200, 'revoked (`access: null`)', GrantDecisionAnswer, ['not_found', 'conflict']),
  }),
  createResponse: route('post', '/v1/responses', 'OpenAI Responses protocol: create a response (a turn; `model` names the agent)', {
    description:
      'The `openai` client\'s `responses.create` and `responses.stream` (docs/responses.md). `previous_response_id` or `conversation` (a conversation key) continues a conversation; a create on a response still running queues behind it while it winds down and completes. `stream: true` answers the protocol\'s event stream (`text/event-stream`, from `response.created` to one of `response.completed`, `response.incomplete`, `response.failed`); `background: true` answers at once. Rudder\'s tools appear as `mcp_call` items. `Idempotency-Key` makes a retried create the same response; once the input is produced, no answer is one the client retries by itself (`x-should-retry: false`). Errors are `{error: {message, type, param, code}}`.',
    requestParams: { header: z.object({ 'idempotency-key': InputId.optional().meta({ description: 'The input\'s id: the same key again is the same response.' }) }) },
    requestBody: { required: true, ...json(CreateResponseBody.meta({ id: 'CreateResponseBody' })) },
    responses: protocol('the response', ['unknown_agent', 'forbidden', 'conflict', 'text_too_long', 'id_reused', 'refused', 'queue_full', 'rate_limited', 'guard_failed', 'unavailable']),
  }),
  retrieveResponse: route('get', '/v1/responses/{id}', 'OpenAI Responses protocol: a response, or its stream replayed (`?stream=true&starting_after=N`)', {
    requestParams: {
      path: z.object({ id: z.string().meta({ description: 'a response id (`resp_…`)' }) }),
      query: z.object({
        stream: z.enum(['true', 'false']).optional().meta({ description: 'replay the response\'s stream from its start (live once it catches up)' }),
        starting_after: z.string().regex(/^\d+$/).optional().meta({ description: 'leave out the events up to this sequence number' }),
      }),
    },
    responses: protocol('the response', ['forbidden', 'not_found', 'rate_limited', 'unavailable']),
  }),
  cancelResponse: route('post', '/v1/responses/{id}/cancel', 'OpenAI Responses protocol: cancel a response (its turn stopped, or its waiting input taken back)', {
    description: 'Answered once the response ended: `cancelled`, or as it ended before (cancelling is idempotent). Needs `write`, as a stop does.',
    requestParams: { path: z.object({ id: z.string().meta({ description: 'a response id (`resp_…`)' }) }) },
    requestBody: noBody,
    responses: protocol('the response', ['forbidden', 'not_found', 'rate_limited', 'unavailable']),
  }),
  health: route('get', '/healthz', '200 once Kafka and the database answer', {
    security: [],
    responses: { '200': { description: 'healthy', ...json(HealthAnswer) }, '503': { description: '`unavailable`, `details` names what is down', ...json(ErrorAnswer) } },
  }),
  metrics: route('get', '/metrics', 'Prometheus metrics of this gateway', {
    security: [],
    responses: { '200': { description: 'the text exposition format', content: { 'text/plain': { schema: z.string() } } } },
  }),
  openapi: route('get', '/openapi.json', 'This document', {
    security: [],
    responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: z.object({}).passthrough() } } } },
  }),
  docs: route('get', '/docs', 'This document as a page', {
    security: [],
    responses: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
  }),
  webChat: route('get', '/', 'The web chat (a page; its calls to the API take the token typed into it)', {
    security: [],
    responses: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
  }),
  webChatScript: route('get', '/app.js', "The web chat's script (an ES module on @rudder/client)", {
    security: [],
    responses: { '200': { description: 'JavaScript', content: { 'text/javascript': { schema: z.string() } } } },
  }),
} satisfies Record<string, RouteSpec>;

export type OperationId = keyof typeof ROUTES;

/** The answer status of a route: its one 2xx response. */
export const successStatus = (spec: RouteSpec): number => Number(Object.keys(spec.operation.responses ?? {}).find((status) => status.startsWith('2')) ?? 200);

/**
 * Whether a route reads a conversation, and so counts against its subject's read rate
 * (`ReadRateGuard`): a `GET` of a `{key}` route, or of a response of the Responses door.
 */
export const readsConversation = (operationId: OperationId): boolean => {
  const spec: RouteSpec = ROUTES[operationId];
  return spec.method === 'get' && (spec.path.includes('{key}') || operationId === 'retrieveResponse');
};

/**
 * Routes a controller method as the table says: its method, its path (`{param}` → `:param`)
 * and its success status; a read of a conversation (`readsConversation`) also takes a token of
 * its subject's read rate, after the controller's `AuthGuard`.
 */
export const Route = (operationId: OperationId): MethodDecorator => {
  const spec: RouteSpec = ROUTES[operationId];
  const method = { get: RequestMethod.GET, post: RequestMethod.POST, put: RequestMethod.PUT, delete: RequestMethod.DELETE }[spec.method];
  return applyDecorators(
    RequestMapping({ method, path: spec.path.replace(/\{(\w+)\}/g, ':$1') }),
    HttpCode(successStatus(spec)),
    ...(readsConversation(operationId) ? [UseGuards(ReadRateGuard)] : []),
  );
};
