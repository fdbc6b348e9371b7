import { formatStreamId, parseStreamId, type ConversationEvent } from '@rudder/contracts';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { errorOf, RudderError } from './errors';

/**
 * A piece of the model's streamed reply (not stored; the gateway keeps a running turn's tokens,
 * and for a minute after it ended, to replay them after a reconnect). `id`: its SSE id
 * (`<position>.<offset>`; absent from a gateway older than token ids).
 */
export type TokenEvent = { type: 'token'; id?: string; data: { turn: string; step: number; text: string } };
/** What `events()` yields: a stored event of the conversation (with its `position`), or a token. */
export type StreamEvent = ConversationEvent | TokenEvent;
/** An SSE message as the gateway sent it: `event` its name (`message` when it named none), `data` unparsed. */
export type StreamMessage = { id: string | undefined; event: string; data: string };

export type EventsOptions = {
  /**
   * The position to resume after (a stored event's `position`; 0: the whole history). Absent:
   * live from when the first connection opens; a reconnect before the first event came resumes
   * after the conversation's position read just before that connection (its status; 0 for a
   * conversation the read side does not know yet), so nothing stored meanwhile is missed.
   */
  after?: number;
  /** Ends the iteration (the stream is closed; the loop ends without an error). */
  signal?: AbortSignal;
  /** No byte for this long (the gateway sends a keep-alive every 15 s): the connection is taken for dead. Default 45 s. */
  idleTimeoutMs?: number;
  /**
   * Called each time a connection is open (the gateway answered 200 and subscribed it): from
   * then on the stream is live, so the events of a write sent now reach this iteration — wait
   * for it before writing when `after` is absent and the write's events matter.
   */
  onOpen?: () => void;
  /**
   * Every SSE message as it arrived, before anything is dropped (what a replay after a
   * reconnect repeats, a token at or below the last offset): for logging, or for checking
   * what the gateway sent.
   */
  onMessage?: (message: StreamMessage) => void;
};

export type Connect = (headers: Record<string, string>, signal: AbortSignal) => Promise<Response>;

/** Backoff between reconnects: 100 ms doubling to 5 s, reset by every message that arrives. */
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 5000;

/**
 * For a stream asked for without a position: the conversation's position now, read before its
 * first connection. When it cannot be read (the read side unavailable; a token that opens the
 * stream only, as a stream token does), the stream goes on without it: live, with nothing to
 * resume from before its first event; whether the stream itself may be opened is its own answer's to say.
 */
export type StartPosition = (signal: AbortSignal) => Promise<number>;

/**
 * The conversation's events as an AsyncIterable that reconnects by itself: after a dropped
 * connection it opens a new one with `Last-Event-ID` = where it is (`StreamCursor`: the position
 * of the last stored event it yielded and the offset of the last token, `<position>.<offset>`),
 * and drops any event at or below that position and any token at or below that offset, so each
 * stored event and each token the gateway kept is yielded exactly once, in order (the gateway
 * replays what was missed). An answer that will not change by retrying (401, 403, 404, 400) ends
 * the iteration with its `RudderError`; 429, 503 and network errors are retried.
 */
export async function* eventStream(connect: Connect, options: EventsOptions = {}, startAt?: StartPosition): AsyncGenerator<StreamEvent, void, undefined> {
  let last = options.after;
  let lastToken: number | null = null;
  /** Without `after`: the conversation's position read before the first connection, resumed from if it is cut before anything came. */
  let start: number | undefined;
  let connections = 0;
  let delay = FIRST_DELAY_MS;
  const idleMs = options.idleTimeoutMs ?? 45_000;
  while (!options.signal?.aborted) {
    const connection = new AbortController();
    const onAbort = () => connection.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(), idleMs);
    };
    try {
      // A live stream names no position until its first event: one cut before that would come
      // back live again and miss what was stored meanwhile. So the position is read before the
      // first connection (which stays live: nothing from before it), and a later one resumes from it.
      if (connections === 0 && last === undefined && startAt) start = await startAt(connection.signal).catch(() => undefined);
      const from = last ?? (connections > 0 ? start : undefined);
      connections += 1;
      touch();
      const cursor: Record<string, string> = from === undefined ? {} : { 'last-event-id': formatStreamId({ position: from, tokenOffset: lastToken }) };
      const response = await connect(cursor, connection.signal);
      if (!response.ok) {
        const error = await errorOf(response);
        if (!error.retryable) throw error;
        delay = Math.max(delay, (error.retryAfterSeconds ?? 0) * 1000);
        throw new RetryLater();
      }
      if (!response.body) throw new RetryLater();
      options.onOpen?.();
      const messages: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (message) => messages.push(message) });
      const decoder = new TextDecoder();
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          touch();
          parser.feed(decoder.decode(value, { stream: true }));
          for (const message of messages.splice(0)) {
            delay = FIRST_DELAY_MS;
            options.onMessage?.({ id: message.id, event: message.event ?? 'message', data: message.data });
            if (message.event === 'token') {
              const data = JSON.parse(message.data) as TokenEvent['data'];
              const at = message.id === undefined ? undefined : parseStreamId(message.id);
              // A gateway older than token ids sends none: such tokens are yielded as they come.
              if (message.id === undefined || at?.tokenOffset == null) {
                yield { type: 'token', data };
                continue;
              }
              if (lastToken !== null && at.tokenOffset <= lastToken) continue;
              lastToken = at.tokenOffset;
              // A live stream that has no position yet names the one its tokens follow.
              last ??= at.position;
              yield { type: 'token', id: message.id, data };
              continue;
            }
            const event = JSON.parse(message.data) as ConversationEvent;
            if (last !== undefined && event.position <= last) continue;
            last = event.position;
            yield event;
          }
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    } catch (error) {
      if (error instanceof RudderError) throw error;
      // A cut connection, a network error, a retryable answer: reconnect below.
    } finally {
      clearTimeout(idle);
      options.signal?.removeEventListener('abort', onAbort);
      connection.abort();
    }
    if (options.signal?.aborted) return;
    await sleep(delay, options.signal);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }
}

class RetryLater extends Error {}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
