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

/** What one stream's response may hold unsent, and who hears of a stream dropped past it. */
export type StreamBufferCap = {
  /** Bytes the response may hold that the client has not taken yet (`writableLength`: the kernel's socket buffers are not counted). */
  maxBytes: number;
  /** The stream was dropped, holding `buffered` bytes: called once per stream. */
  dropped(buffered: number): void;
};

/** An event stream's sink on an HTTP response; `drained` is for a writer of many messages at once (a replay). */
export type ResponseSink = StreamSink & {
  /** Resolves once the response takes writes again ('drain'): at once unless its last write was refused (`writableNeedDrain`), or when it closes. */
  drained(): Promise<void>;
};

/**
 * An HTTP response as an event stream's sink: the head goes out on `open` (so errors before
 * it still answer as JSON), a keep-alive comment every 15 s after it, nothing after `end`.
 *
 * A client that reads slower than its conversation produces makes the response hold what it
 * has not taken; past `cap.maxBytes` the response is destroyed (the connection dropped, what
 * it held let go), not ended: an end would wait behind the same bytes. The client has every
 * message the kernel had taken, and resumes after the last whole one with `Last-Event-ID`
 * (`@rudder/client` does by itself). A message larger than the cap still goes out when the
 * response holds nothing else, so no message can drop every stream that carries it.
 */
export function responseSink(response: ServerResponse, cap?: StreamBufferCap): ResponseSink {
  let keepAlive: NodeJS.Timeout | undefined;
  const sink: ResponseSink = {
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
      if (response.writableEnded || response.destroyed) return;
      const waiting = response.writableLength;
      if (cap && waiting > 0 && waiting + chunk.length > cap.maxBytes) {
        clearInterval(keepAlive);
        response.destroy();
        cap.dropped(waiting);
        return;
      }
      response.write(chunk);
    },
    end: () => {
      clearInterval(keepAlive);
      if (!response.writableEnded) response.end();
    },
    drained: () =>
      !response.writableNeedDrain
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const done = () => {
              response.off('drain', done);
              response.off('close', done);
              resolve();
            };
            response.on('drain', done);
            response.on('close', done);
          }),
  };
  return sink;
}
