import type { ServerResponse } from 'node:http';
import { formatStreamId, type ConversationEvent, type StreamCursor, type TokenRecord } from '@rudder/contracts';
import type { StreamSink } from './event-stream';

/**
 * The wire format of `GET /v1/conversations/{key}/events` (text/event-stream).
 * A stored event carries its position as the SSE id, a token `<position>.<offset>` (see
 * `StreamCursor`), so a reconnecting client's `Last-Event-ID` says where to resume both.
 */
export const sseEvent = (event: ConversationEvent): string =>
  `id: ${event.position}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

export const sseToken = (token: TokenRecord, cursor: StreamCursor): string =>
  `id: ${formatStreamId(cursor)}\nevent: token\ndata: ${JSON.stringify({ turn: token.turn, step: token.step, text: token.text })}\n\n`;

/** A comment line: keeps proxies and load balancers from closing an idle stream. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n';
export const KEEP_ALIVE_MS = 15_000;

/**
 * An HTTP response as an event stream's sink: the head goes out on `open` (so errors before
 * it still answer as JSON), a keep-alive comment every 15 s after it, nothing after `end`.
 */
export function responseSink(response: ServerResponse): StreamSink {
  let keepAlive: NodeJS.Timeout | undefined;
  const sink: StreamSink = {
    open: () => {
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      response.flushHeaders();
      keepAlive = setInterval(() => sink.write(SSE_KEEP_ALIVE), KEEP_ALIVE_MS);
    },
    write: (chunk) => {
      if (!response.writableEnded && !response.destroyed) response.write(chunk);
    },
    end: () => {
      clearInterval(keepAlive);
      if (!response.writableEnded) response.end();
    },
  };
  return sink;
}
