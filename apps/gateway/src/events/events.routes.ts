import { STREAM_ID_PATTERN, StreamMessage, StreamTokenAnswer, streamEventTypes } from '@rudder/contracts';
import { z } from 'zod';
import { conversation, errorResponses, json, noBody } from '../http/openapi';
import { route, type Routes } from '../http/route';

export const EVENT_ROUTES = {
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
  streamToken: route('post', '/v1/conversations/{key}/stream-tokens', "A short-lived token that opens this conversation's event stream only", {
    requestParams: { path: conversation },
    requestBody: noBody,
    responses: {
      '201': { description: 'issued', ...json(StreamTokenAnswer) },
      ...errorResponses(['forbidden', 'unavailable']),
    },
  }),
} satisfies Routes;
