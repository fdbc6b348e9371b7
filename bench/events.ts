import { performance } from 'node:perf_hooks';
import type { ConversationEvent } from '@rudder/contracts';
import { readEvents } from '../test/sse';
import type { Client } from '../test/client';

/** A conversation event as it arrived on the SSE stream, `arrived` on performance.now(). */
export type Arrival = { event: ConversationEvent; arrived: number };

export type EventWatch = {
  /** The first event (already arrived or to come) that `match` accepts. */
  next(match: (event: ConversationEvent) => boolean, timeoutMs?: number): Promise<Arrival>;
  close(): void;
};

/**
 * Keeps a conversation's live SSE stream open and timestamps each event as it arrives, so a
 * benchmark can wait for "the turn.ended of turn X" and know when it came. Token messages
 * are skipped.
 */
export async function watchEvents(client: Client, key: string): Promise<EventWatch> {
  const abort = new AbortController();
  const response = await client.events(key, {}, abort.signal);
  if (response.status !== 200) throw new Error(`events of ${key}: HTTP ${response.status}`);
  const arrived: Arrival[] = [];
  let waiters: { match: (event: ConversationEvent) => boolean; resolve(arrival: Arrival): void }[] = [];
  void readEvents(
    response,
    (message) => {
      if (message.event === 'token') return false;
      const arrival = { event: message.data as ConversationEvent, arrived: performance.now() };
      arrived.push(arrival);
      waiters = waiters.filter((w) => !(w.match(arrival.event) && (w.resolve(arrival), true)));
      return false;
    },
    10 * 60_000,
  ).catch(() => undefined); // ends when aborted
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
