import { GatewayError } from '../errors/gateway-error';

export type LimitSettings = {
  /** Inputs per second per subject; 0: no limit. */
  LIMIT_INPUTS_PER_SECOND: number;
  /** Inputs a subject may send at once after a quiet spell; default twice the rate (at least 1). */
  LIMIT_INPUTS_BURST?: number;
  /** Event streams a subject may hold open at once; 0: no limit. */
  LIMIT_STREAMS_PER_SUBJECT: number;
  /** Reads (status, transcript, turns, events, stream tokens) per second per subject; 0 or unset: no limit. */
  LIMIT_READS_PER_SECOND?: number;
  /** Reads a subject may send at once after a quiet spell; default twice the rate (at least 1). */
  LIMIT_READS_BURST?: number;
};

/** The limits where requests are authenticated, unless set. */
export const DEFAULT_LIMITS = { LIMIT_INPUTS_PER_SECOND: 50, LIMIT_STREAMS_PER_SUBJECT: 32, LIMIT_READS_PER_SECOND: 100 } as const;

/**
 * The limits a gateway applies: what is set, else `DEFAULT_LIMITS` where requests are
 * authenticated, and none in open development mode (`open`). There every request is the one
 * subject `anonymous`, so a limit per subject would be a cap on the whole deployment, every
 * client together, not a guard of one subject against the others (a load test or a demo with a
 * few users of `npm start` would get 429s at 50 inputs a second in all).
 */
export function limitSettings(
  config: {
    LIMIT_INPUTS_PER_SECOND?: number;
    LIMIT_INPUTS_BURST?: number;
    LIMIT_STREAMS_PER_SUBJECT?: number;
    LIMIT_READS_PER_SECOND?: number;
    LIMIT_READS_BURST?: number;
  },
  open: boolean,
): LimitSettings {
  const unset = open ? { LIMIT_INPUTS_PER_SECOND: 0, LIMIT_STREAMS_PER_SUBJECT: 0, LIMIT_READS_PER_SECOND: 0 } : DEFAULT_LIMITS;
  return {
    LIMIT_INPUTS_PER_SECOND: config.LIMIT_INPUTS_PER_SECOND ?? unset.LIMIT_INPUTS_PER_SECOND,
    LIMIT_INPUTS_BURST: config.LIMIT_INPUTS_BURST,
    LIMIT_STREAMS_PER_SUBJECT: config.LIMIT_STREAMS_PER_SUBJECT ?? unset.LIMIT_STREAMS_PER_SUBJECT,
    LIMIT_READS_PER_SECOND: config.LIMIT_READS_PER_SECOND ?? unset.LIMIT_READS_PER_SECOND,
    LIMIT_READS_BURST: config.LIMIT_READS_BURST,
  };
}

/** What a 429 for too many open streams tells the client to wait: streams end when clients leave, not on a clock. */
const STREAM_RETRY_AFTER_SECONDS = 5;
/** Past this many subjects tracked, buckets that have refilled are forgotten (they hold nothing a fresh one would not). */
const PRUNE_ABOVE = 10_000;

type Bucket = { tokens: number; at: number };

/**
 * Limits per subject, kept in this gateway process: a token bucket of inputs (rate
 * LIMIT_INPUTS_PER_SECOND, burst LIMIT_INPUTS_BURST), one of reads (LIMIT_READS_PER_SECOND,
 * LIMIT_READS_BURST) and a count of open event streams
 * (LIMIT_STREAMS_PER_SUBJECT). Past either: 429 `rate_limited` with `Retry-After` (whole
 * seconds) and `details: {limit, retryAfter}`. Subjects never share a bucket, so one
 * subject over its limits slows down nobody else. With N gateways behind a balancer a
 * subject gets up to N times the limits: they guard each gateway, not a global quota.
 */
export class SubjectLimits {
  private readonly inputs: Rate;
  private readonly reads: Rate;
  private readonly streams = new Map<string, number>();

  constructor(
    private readonly settings: LimitSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.inputs = new Rate('inputs', settings.LIMIT_INPUTS_PER_SECOND, settings.LIMIT_INPUTS_BURST);
    this.reads = new Rate('reads', settings.LIMIT_READS_PER_SECOND ?? 0, settings.LIMIT_READS_BURST);
  }

  /** Counts one input of `subject`; 429 when its bucket is empty. */
  takeInput(subject: string): void {
    this.inputs.take(subject, this.now());
  }

  /** Counts one read of `subject` (a bucket of its own: reading never costs a subject its inputs); 429 when it is empty. */
  takeRead(subject: string): void {
    this.reads.take(subject, this.now());
  }

  /**
   * Counts one more open stream of `subject` and returns its release (idempotent: call it
   * when the stream ends, however it ends); 429 when the subject holds its limit already.
   */
  openStream(subject: string): () => void {
    const max = this.settings.LIMIT_STREAMS_PER_SUBJECT;
    const open = this.streams.get(subject) ?? 0;
    if (max !== 0 && open >= max) {
      throw tooMany(`${subject} has ${open} event streams open, the most allowed; close one first`, 'streams', STREAM_RETRY_AFTER_SECONDS);
    }
    this.streams.set(subject, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.streams.get(subject) ?? 1) - 1;
      if (left > 0) this.streams.set(subject, left);
      else this.streams.delete(subject);
    };
  }

  /** Open streams of a subject now (for tests and diagnostics). */
  streamsOf(subject: string): number {
    return this.streams.get(subject) ?? 0;
  }

}

/** A token bucket per subject: `rate` a second, bursts of `burst` (default twice the rate, at least 1); rate 0: no limit. */
class Rate {
  private readonly buckets = new Map<string, Bucket>();
  private readonly burst: number;

  constructor(
    private readonly what: 'inputs' | 'reads',
    private readonly rate: number,
    burst: number | undefined,
  ) {
    this.burst = burst ?? Math.max(1, Math.ceil(2 * rate));
  }

  take(subject: string, now: number): void {
    const rate = this.rate;
    if (rate === 0) return;
    const bucket = this.buckets.get(subject) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (bucket.tokens < 1) {
      this.buckets.set(subject, bucket);
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
      throw tooMany(`${subject} sends more than ${rate} ${this.what} per second (bursts of ${this.burst}); retry in ${retryAfter} s`, this.what, retryAfter);
    }
    bucket.tokens -= 1;
    this.buckets.set(subject, bucket);
    if (this.buckets.size > PRUNE_ABOVE) this.prune(now);
  }

  private prune(now: number): void {
    const refill = (this.burst / this.rate) * 1000;
    for (const [subject, bucket] of this.buckets) if (now - bucket.at >= refill) this.buckets.delete(subject);
  }
}

const tooMany = (message: string, limit: 'inputs' | 'reads' | 'streams', retryAfter: number) =>
  new GatewayError('rate_limited', message, { limit, retryAfter }, { 'retry-after': String(retryAfter) });
