import { GatewayError } from '../errors/gateway-error';

export type LimitSettings = {
  /** Inputs per second per subject; 0: no limit. */
  LIMIT_INPUTS_PER_SECOND: number;
  /** Inputs a subject may send at once after a quiet spell; default twice the rate (at least 1). */
  LIMIT_INPUTS_BURST?: number;
  /** Event streams a subject may hold open at once; 0: no limit. */
  LIMIT_STREAMS_PER_SUBJECT: number;
};

/** The limits where requests are authenticated, unless set. */
export const DEFAULT_LIMITS = { LIMIT_INPUTS_PER_SECOND: 50, LIMIT_STREAMS_PER_SUBJECT: 32 } as const;

/**
 * The limits a gateway applies: what is set, else `DEFAULT_LIMITS` where requests are
 * authenticated, and none in open development mode (`open`). There every request is the one
 * subject `anonymous`, so a limit per subject would be a cap on the whole deployment, every
 * client together, not a guard of one subject against the others (a load test or a demo with a
 * few users of `npm start` would get 429s at 50 inputs a second in all).
 */
export function limitSettings(
  config: { LIMIT_INPUTS_PER_SECOND?: number; LIMIT_INPUTS_BURST?: number; LIMIT_STREAMS_PER_SUBJECT?: number },
  open: boolean,
): LimitSettings {
  const unset = open ? { LIMIT_INPUTS_PER_SECOND: 0, LIMIT_STREAMS_PER_SUBJECT: 0 } : DEFAULT_LIMITS;
  return {
    LIMIT_INPUTS_PER_SECOND: config.LIMIT_INPUTS_PER_SECOND ?? unset.LIMIT_INPUTS_PER_SECOND,
    LIMIT_INPUTS_BURST: config.LIMIT_INPUTS_BURST,
    LIMIT_STREAMS_PER_SUBJECT: config.LIMIT_STREAMS_PER_SUBJECT ?? unset.LIMIT_STREAMS_PER_SUBJECT,
  };
}

/** What a 429 for too many open streams tells the client to wait: streams end when clients leave, not on a clock. */
const STREAM_RETRY_AFTER_SECONDS = 5;
/** Past this many subjects tracked, buckets that have refilled are forgotten (they hold nothing a fresh one would not). */
const PRUNE_ABOVE = 10_000;

type Bucket = { tokens: number; at: number };

/**
 * Limits per subject, kept in this gateway process: a token bucket of inputs (rate
 * LIMIT_INPUTS_PER_SECOND, burst LIMIT_INPUTS_BURST) and a count of open event streams
 * (LIMIT_STREAMS_PER_SUBJECT). Past either: 429 `rate_limited` with `Retry-After` (whole
 * seconds) and `details: {limit, retryAfter}`. Subjects never share a bucket, so one
 * subject over its limits slows down nobody else. With N gateways behind a balancer a
 * subject gets up to N times the limits: they guard each gateway, not a global quota.
 */
export class SubjectLimits {
  private readonly buckets = new Map<string, Bucket>();
  private readonly streams = new Map<string, number>();
  private readonly burst: number;

  constructor(
    private readonly settings: LimitSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.burst = settings.LIMIT_INPUTS_BURST ?? Math.max(1, Math.ceil(2 * settings.LIMIT_INPUTS_PER_SECOND));
  }

  /** Counts one input of `subject`; 429 when its bucket is empty. */
  takeInput(subject: string): void {
    const rate = this.settings.LIMIT_INPUTS_PER_SECOND;
    if (rate === 0) return;
    const now = this.now();
    const bucket = this.buckets.get(subject) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (bucket.tokens < 1) {
      this.buckets.set(subject, bucket);
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
      throw tooMany(`${subject} sends more than ${rate} inputs per second (bursts of ${this.burst}); retry in ${retryAfter} s`, 'inputs', retryAfter);
    }
    bucket.tokens -= 1;
    this.buckets.set(subject, bucket);
    if (this.buckets.size > PRUNE_ABOVE) this.prune(now, rate);
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

  private prune(now: number, rate: number): void {
    const refill = (this.burst / rate) * 1000;
    for (const [subject, bucket] of this.buckets) if (now - bucket.at >= refill) this.buckets.delete(subject);
  }
}

const tooMany = (message: string, limit: 'inputs' | 'streams', retryAfter: number) =>
  new GatewayError('rate_limited', message, { limit, retryAfter }, { 'retry-after': String(retryAfter) });
