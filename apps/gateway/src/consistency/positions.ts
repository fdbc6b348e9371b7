import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';
import onHeaders from 'on-headers';
import { GatewayError } from '../errors/gateway-error';
import { ProducedPositions } from './produced-positions';

/** How many conversations a gateway remembers the last write position of (least recently written go first). */
const REMEMBERED = 100_000;

/**
 * Read your writes, in one gateway: the log position of the latest decision it answered a
 * write with, per conversation. Every read of that conversation through this gateway (and the
 * early access check of every write) asks the companion for a view at least that fresh.
 */
export class Positions {
  private readonly latest = new Map<string, number>();
  /** The highest position this gateway knows the log produced, and the reads waiting for later ones. */
  readonly produced: ProducedPositions;

  constructor(aheadWaitMs?: number) {
    this.produced = new ProducedPositions(aheadWaitMs);
  }

  note(key: string, position: number): void {
    this.produced.saw(position);
    const known = this.latest.get(key) ?? 0;
    this.latest.delete(key);
    this.latest.set(key, Math.max(known, position));
    if (this.latest.size > REMEMBERED) this.latest.delete(this.latest.keys().next().value!);
  }

  get(key: string): number {
    return this.latest.get(key) ?? 0;
  }
}

/**
 * What the request being handled knows of positions: the one the client asked its reads to
 * reflect (`Rudder-Min-Position`: what another gateway answered its write with, 0: none), and
 * the highest the companion's answers to it carried (`Rudder-Position`: its view of the
 * conversation had folded that far when it answered, 0: none).
 */
type RequestPositions = { requested: number; view: number };
const current = new AsyncLocalStorage<RequestPositions>();

export const requestedPosition = (): number => current.getStore()?.requested ?? 0;

/** The highest position the companion's answers to this request carried (0: none). */
export const viewPosition = (): number => current.getStore()?.view ?? 0;

/** Notes a position a companion answer to this request carried. */
export function noteViewPosition(position: number): void {
  const store = current.getStore();
  if (store !== undefined && position > store.view) store.view = position;
}

type Request = { headers: Record<string, string | string[] | undefined> };

/** Express middleware: reads `Rudder-Min-Position` (a non-negative integer, else 400) into the request's context. */
export function readMinPosition(request: Request, _response: unknown, next: (error?: unknown) => void): void {
  const raw = request.headers['rudder-min-position'];
  if (raw === undefined) return current.run({ requested: 0, view: 0 }, next);
  const value = typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) return next(new GatewayError('bad_request', 'Rudder-Min-Position is a non-negative integer (a position a write answered with)'));
  current.run({ requested: value, view: 0 }, next);
}

/**
 * Express middleware, after `readMinPosition`: every 2xx answer to a write of a conversation (a
 * request other than `GET` or `HEAD` to a `{key}` route) carries `Rudder-Position`: the log
 * position of the worker's decision it answered (or a later one of the same conversation). A
 * read through this gateway reflects at least it; through another, pass it as
 * `Rudder-Min-Position`.
 *
 * A write answered from what the companion already knows (a chat or steer sent again with its
 * id, a retraction or promotion decided before) carries the position the companion's view of
 * the conversation had reached when it answered: the decision it found is at or before it.
 *
 * Set as the answer's headers go out (`on-headers`), when the route has named the conversation
 * (`params.key`, which the router keeps until the answer is sent).
 */
export function answerPosition(positions: Positions) {
  return (request: Request & { method?: string; params?: Record<string, string> }, response: ServerResponse, next: () => void): void => {
    if (request.method === 'GET' || request.method === 'HEAD') return next();
    const store = current.getStore();
    onHeaders(response, function () {
      const key = request.params?.key;
      if (key === undefined || this.statusCode < 200 || this.statusCode >= 300) return;
      const position = Math.max(positions.get(key), store?.view ?? 0);
      if (position > 0) this.setHeader('Rudder-Position', String(position));
    });
    next();
  };
}
