import { GatewayError } from '../errors/gateway-error';

/**
 * How far past the highest position a gateway has seen a `Rudder-Min-Position` may be and
 * still be waited for; further is refused at once (400). Positions count the log's events
 * (with gaps), so this is far more than the log grows while one gateway's consumer lags another's.
 */
export const AHEAD_POSITIONS = 1_000_000;
/** How long a read waits for this gateway to see a position ahead of the highest it has seen. */
export const AHEAD_WAIT_MS = 2000;
/** Distinct positions waited for at once, at most; past it a read ahead of the log is 503 (try again). */
const MAX_WAITS = 10_000;

type Wait = { promise: Promise<void>; wake(): void; timer: NodeJS.Timeout };

/**
 * The highest log position this gateway knows was produced, and the reads waiting for a later
 * one. It learns positions from the commits' announcements (every gateway hears every commit's
 * `last`, `Announcements`), the records of `agent.events` its live consumer reads (every gateway
 * reads every record), the decisions it answered writes with, and the positions the companion's
 * answers carry.
 *
 * A read asking for a position (`Rudder-Min-Position`) at or below it goes on at once (the
 * companion then waits, bounded, until its view has folded that far). One ahead of it by at
 * most AHEAD_POSITIONS may be real, answered by another gateway whose consumer is a moment
 * ahead of this one's: it waits until this gateway's consumer has seen it, at most
 * AHEAD_WAIT_MS, then goes on (the companion has the last word: it answers once its view has
 * it, else 503). Every read waiting for one position shares one wait, woken by the announcement
 * or record that reaches it, never a poll. Further ahead is beyond anything the log has
 * produced: 400 at once.
 */
export class ProducedPositions {
  private seen = 0;
  private readonly waits = new Map<number, Wait>();
  /** The lowest position waited for (Infinity: none), so a record below it wakes nothing and costs a comparison. */
  private lowestWaited = Infinity;

  constructor(private readonly aheadWaitMs = AHEAD_WAIT_MS) {}

  get highest(): number {
    return this.seen;
  }

  /** Waits in progress (for tests and diagnostics): one per distinct position. */
  get waiting(): number {
    return this.waits.size;
  }

  /** A position the log has produced; wakes the reads waiting for it or an earlier one. */
  saw(position: number): void {
    if (position <= this.seen) return;
    this.seen = position;
    if (position < this.lowestWaited) return;
    let lowest = Infinity;
    for (const [at, wait] of this.waits) {
      if (at <= position) this.end(at, wait);
      else lowest = Math.min(lowest, at);
    }
    this.lowestWaited = lowest;
  }

  /** Resolves when a read asking for `position` may go on to the companion; 400 when it is beyond the log. */
  async reach(position: number): Promise<void> {
    if (position <= this.seen) return;
    if (position > this.seen + AHEAD_POSITIONS) throw beyond(position, this.seen);
    let wait = this.waits.get(position);
    if (!wait) {
      if (this.waits.size >= MAX_WAITS) throw new GatewayError('unavailable', 'too many reads wait for positions this gateway has not seen yet; try again shortly');
      let wake!: () => void;
      const promise = new Promise<void>((resolve) => (wake = resolve));
      const timer = setTimeout(() => this.end(position, created), this.aheadWaitMs);
      timer.unref();
      const created: Wait = { promise, wake, timer };
      this.waits.set(position, (wait = created));
      this.lowestWaited = Math.min(this.lowestWaited, position);
    }
    await wait.promise;
  }

  private end(position: number, wait: Wait): void {
    if (this.waits.get(position) !== wait) return;
    this.waits.delete(position);
    clearTimeout(wait.timer);
    wait.wake();
  }
}

const beyond = (position: number, seen: number) =>
  new GatewayError(
    'bad_request',
    `Rudder-Min-Position ${position} is beyond anything the log has produced (this gateway has seen up to ${seen}); send a position a write was answered with, or an event's`,
    { position, seen },
  );
