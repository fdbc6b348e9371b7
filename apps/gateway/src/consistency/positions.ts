import { AsyncLocalStorage } from 'node:async_hooks';
import { GatewayError } from '../errors/gateway-error';

/** How many conversations a gateway remembers the last write position of (least recently written go first). */
const REMEMBERED = 100_000;

/**
 * Read your writes, in one gateway: the log position of the latest decision it answered a
 * write with, per conversation. Every read of that conversation through this gateway (and the
 * early access check of every write) asks the companion for a view at least that fresh.
 */
export class Positions {
  private readonly latest = new Map<string, number>();

  note(key: string, position: number): void {
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
 * The position a client asked its reads to reflect (`Rudder-Min-Position`: what another
 * gateway answered its write with), for the request being handled.
 */
const requested = new AsyncLocalStorage<number>();

export const requestedPosition = (): number => requested.getStore() ?? 0;

type Request = { headers: Record<string, string | string[] | undefined> };

/** Express middleware: reads `Rudder-Min-Position` (a non-negative integer, else 400) into the request's context. */
export function readMinPosition(request: Request, _response: unknown, next: (error?: unknown) => void): void {
  const raw = request.headers['rudder-min-position'];
  if (raw === undefined) return next();
  const value = typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) return next(new GatewayError('bad_request', 'Rudder-Min-Position is a non-negative integer (a position a write answered with)'));
  requested.run(value, next);
}
