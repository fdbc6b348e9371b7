import type { AffordanceKind } from './model-requests';
import type { Backoff } from './settings';

/** How many conversations' failures are remembered at most: past it the one that failed least recently is forgotten. */
export const REMEMBERED_FAILURES = 10_000;

type Remembered = { position: number; failures: number; until: number };

/**
 * The model requests of an affordance that failed lately, per conversation, kind and the
 * position asked about, in this process's memory: while one is remembered, an ask of that
 * position answers empty without asking the model again, so any number of asks cost a bounded
 * number of requests (and a model's 429 is not answered with more). Each failure at the same
 * position is remembered twice as long as the one before, up to the cap; a position that moved
 * (another turn ended) or a success starts over. At most `entries` are kept.
 */
export class FailureMemory {
  /** In the order they last failed: the first is the one to forget. */
  private readonly remembered = new Map<string, Remembered>();

  constructor(
    private readonly backoff: Backoff,
    private readonly now: () => number = Date.now,
    private readonly entries = REMEMBERED_FAILURES,
  ) {}

  /** Whether a failure of `kind` at `position` is remembered now: an ask of it answers empty. */
  holds(key: string, kind: AffordanceKind, position: number): boolean {
    const entry = this.remembered.get(id(key, kind));
    return entry !== undefined && entry.position === position && this.now() < entry.until;
  }

  /** Remembers a failure at `position`; answers for how long, in milliseconds. */
  failed(key: string, kind: AffordanceKind, position: number): number {
    const { firstMs, maxMs } = this.backoff;
    if (firstMs <= 0) return 0;
    const at = id(key, kind);
    const before = this.remembered.get(at);
    const failures = before?.position === position ? before.failures + 1 : 1;
    const ms = Math.min(maxMs, firstMs * 2 ** Math.min(failures - 1, 30));
    this.remembered.delete(at);
    this.remembered.set(at, { position, failures, until: this.now() + ms });
    for (const oldest of this.remembered.keys()) {
      if (this.remembered.size <= this.entries) break;
      this.remembered.delete(oldest);
    }
    return ms;
  }

  /** Forgets the failures of `kind` in the conversation: it was made. */
  succeeded(key: string, kind: AffordanceKind): void {
    this.remembered.delete(id(key, kind));
  }

  /** How many are remembered (expired ones too, until they succeed, fail again or are pushed out). */
  get size(): number {
    return this.remembered.size;
  }
}

const id = (key: string, kind: AffordanceKind): string => `${kind}\n${key}`;
