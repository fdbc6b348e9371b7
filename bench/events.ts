import { performance } from 'node:perf_hooks';
import type { ConversationEvent } from '@rudder/contracts';
import type { RudderClient } from '@rudder/client';

/** A conversation event as it arrived on the SSE stream, `arrived` on performance.now(). */
export type Arrival = { event: ConversationEvent; arrived: number };

export type EventWatch = {
  /** The first event (already arrived or to come) that `match` accepts. */
  next(match: (event: ConversationEvent) => boolean, timeoutMs?: number): Promise<Arrival>;
  close(): void;
};

/**
 * Keeps a conversation's live event stream open (`RudderClient.events`) and timestamps each
 * event as it arrives, so a benchmark can wait for "the turn.ended of turn X" and know when it
 * came. Answers once the stream is open, so the events of what is sent next all arrive. Tokens
 * are skipped.
 */
export async function watchEvents(client: RudderClient, key: string): Promise<EventWatch> {
  const abort = new AbortController();
  const arrived: Arrival[] = [];
  let waiters: { match: (event: ConversationEvent) => boolean; resolve(arrival: Arrival): void }[] = [];
  await new Promise<void>((open, fail) => {
    const watching = async () => {
      for await (const event of client.events(key, { signal: abort.signal, onOpen: open })) {
        if (event.type === 'token') continue;
        const arrival = { event, arrived: performance.now() };
        arrived.push(arrival);
        waiters = waiters.filter((w) => !(w.match(arrival.event) && (w.resolve(arrival), true)));
      }
    };
    watching().catch(fail); // ends when closed; an error before the stream opened fails the watch
  });
  return {
    next(match, timeoutMs = 60_000) {
      const seen = arrived.find((a) => match(a.event));
      if (seen) return Promise.resolve(seen);
      return new Promise<Arrival>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching event on ${key} within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ match, resolve: (a) => (clearTimeout(timer), resolve(a)) });
      });
    },
    close: () => abort.abort(),
  };
}

/** Matchers for the events the benchmarks wait for. */
export const is = {
  accepted: (input: string) => (e: ConversationEvent) => e.type === 'input.accepted' && e.data.input.id === input,
  started: (input: string) => (e: ConversationEvent) => e.type === 'turn.started' && e.data.prompt.id === input,
  ended: (turn: string) => (e: ConversationEvent) => e.type === 'turn.ended' && e.data.turn === turn,
  toolStarted: (turn: string) => (e: ConversationEvent) => e.type === 'tool.started' && e.data.turn === turn,
  toolEnded: (turn: string) => (e: ConversationEvent) => e.type === 'tool.ended' && e.data.turn === turn,
  steerAccepted: (input: string) => (e: ConversationEvent) => e.type === 'steer.accepted' && e.data.input.id === input,
  steerTaken: (input: string) => (e: ConversationEvent) => e.type === 'steer.taken' && e.data.input.id === input,
};

/** The id of the turn an input started, read off its turn.started. */
export const turnOf = async (watch: EventWatch, input: string) => {
  const { event } = await watch.next(is.started(input));
  return event.type === 'turn.started' ? event.data.turn : '';
};
