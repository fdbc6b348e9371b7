import type { ServerResponse } from 'node:http';
import { formatStreamId, type ConversationEvent, type StreamCursor, type TokenRecord } from '@rudder/contracts';
import type { KeptToken } from '../live/kept-tokens';

/**
 * The wire format of `GET /v1/conversations/{key}/events` (text/event-stream).
 * A stored event carries its position as the SSE id, a token `<position>.<offset>` (see
 * `StreamCursor`), so a reconnecting client's `Last-Event-ID` says where to resume both.
 *
 * A record handed to every stream of a conversation is one object: it is formatted once, and
 * the streams write (and, when their clients lag, hold) the same string, not a copy each. A
 * token's id names the position its stream sent last, the same for the streams that are live.
 */
export const sseEvent = (event: ConversationEvent): string => {
  let text = formattedEvents.get(event);
  if (text === undefined) formattedEvents.set(event, (text = `id: ${event.position}\nevent: ${event.type}\ndata: ${JSON.stringify(shown(event))}\n\n`));
  return text;
};

/** An event as a client is shown it: an answer the output guard rejected goes without its text (`answer`), which no person sees. */
const shown = (event: ConversationEvent): ConversationEvent => {
  if (event.type !== 'answer.rejected') return event;
  const { answer: _hidden, ...data } = event.data;
  return { ...event, data } as ConversationEvent;
};

export const sseToken = (token: TokenRecord, cursor: StreamCursor): string => {
  const id = formatStreamId(cursor);
  const last = formattedTokens.get(token);
  if (last?.id === id) return last.text;
  const text = `id: ${id}\nevent: token\ndata: ${JSON.stringify({ turn: token.turn, step: token.step, text: token.text })}\n\n`;
  formattedTokens.set(token, { id, text });
  return text;
};

const formattedEvents = new WeakMap<ConversationEvent, string>();
const formattedTokens = new WeakMap<TokenRecord, { id: string; text: string }>();

/** What a stream writes for each event and token it carries, in the order it carries them. */
export type StreamFormat = {
  event(event: ConversationEvent): string;
  token(token: KeptToken, cursor: StreamCursor): string;
};

/** Rudder's own SSE messages: what a stream writes unless a door gives its own translation. */
export const RUDDER_SSE: StreamFormat = {
  event: sseEvent,
  token: (token, cursor) => sseToken(token.record, cursor),
};

/** Where a stream's bytes go: the HTTP response, in production. */
export type StreamSink = {
  /** Sends the response head; called once, before the first write. */
  open(): void;
  write(chunk: string): void;
  end(): void;
  /** Resolves once the client has taken what was written (an HTTP response's 'drain'); a replay awaits it between pages. */
  drained?(): Promise<void>;
};

/** A comment line: keeps proxies and load balancers from closing an idle stream. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n';
export const KEEP_ALIVE_MS = 15_000;
/** A response a turn left past its cap, with no write after it, is looked at again this much later. */
export const LAG_GRACE_MS = 1000;

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
 * has not taken. What it still holds from earlier turns of the event loop is the client's lag:
 * past `cap.maxBytes` the response is destroyed (the connection dropped, what it held let go),
 * not ended: an end would wait behind the same bytes. The client has every message the kernel
 * had taken, and resumes after the last whole one with `Last-Event-ID` (`@rudder/client` does
 * by itself).
 *
 * What one turn of the event loop writes is not held against the client, however large (a
 * Kafka batch handed out at once, a message larger than the cap: no client could take it
 * between two writes): a stream holds at most the cap plus one turn's writes. Nor is the
 * burst of the turn the stream opens (`EventStream.start` writes its whole replay there, from
 * an array already in memory): the cap counts beyond what is left of it, which only shrinks. A
 * writer that writes a replay over several turns (in pages) awaits `drained` between them.
 * A turn that leaves the response past the cap is looked at again `LAG_GRACE_MS` later, so a
 * stream is dropped also when no write follows.
 */
export function responseSink(response: ServerResponse, cap?: StreamBufferCap): ResponseSink {
  let keepAlive: NodeJS.Timeout | undefined;
  /** Writes of this turn of the event loop have begun (reset by `setImmediate`). */
  let inTurn = false;
  /** What is left of the burst of the turn the stream opened (bytes). */
  let backlog = 0;
  /** Set when a turn left the response over the cap: it is dropped unless its client takes enough by then. */
  let grace: NodeJS.Timeout | undefined;
  /** What the response holds unsent beyond the cap from earlier turns (bytes), 0 if within it. */
  const lagPastCap = (): number => {
    const lag = response.writableLength;
    backlog = Math.min(backlog, lag);
    return cap && lag > backlog + cap.maxBytes ? lag : 0;
  };
  const drop = (lag: number) => {
    clearInterval(keepAlive);
    clearTimeout(grace);
    response.destroy();
    cap?.dropped(lag);
  };
  const beginTurn = (then?: () => void) => {
    inTurn = true;
    setImmediate(() => {
      inTurn = false;
      then?.();
      // No write may come soon to notice the lag (the conversation went quiet): look again.
      if (grace === undefined && !response.destroyed && lagPastCap() > 0) {
        grace = setTimeout(() => {
          grace = undefined;
          const lag = response.destroyed || inTurn ? 0 : lagPastCap();
          if (lag > 0) drop(lag);
        }, LAG_GRACE_MS);
        grace.unref();
      }
    });
  };
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
      beginTurn(() => (backlog = response.writableLength));
    },
    write: (chunk) => {
      if (response.writableEnded || response.destroyed) return;
      if (!inTurn) {
        const lag = lagPastCap();
        if (lag > 0) return drop(lag);
        beginTurn();
      }
      response.write(chunk);
    },
    end: () => {
      clearInterval(keepAlive);
      clearTimeout(grace);
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
