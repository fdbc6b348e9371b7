/**
 * Entries kept under one budget of bytes, across conversations: adding one past the budget
 * lets the oldest go first (`evict`: the owner drops it from wherever it keeps it), however
 * many each conversation holds. An entry its owner drops by other means (a sweep, a bound per
 * conversation) is `release`d, so the budget counts what is kept, no more.
 *
 * Insertion order is a `Map`'s: eviction and release are O(1), and nothing dropped stays
 * referenced here.
 */
export class ByteBudget<Entry> {
  private readonly kept = new Map<Entry, number>();
  private used = 0;

  constructor(
    readonly maxBytes: number,
    private readonly evict: (entry: Entry) => void,
  ) {}

  /** The bytes of the entries kept now. */
  get bytes(): number {
    return this.used;
  }

  /** Counts `entry`, then evicts the oldest entries (`entry` itself last) until the total is within the budget. */
  add(entry: Entry, bytes: number): void {
    this.kept.set(entry, bytes);
    this.used += bytes;
    for (const [oldest, size] of this.kept) {
      if (this.used <= this.maxBytes) break;
      this.kept.delete(oldest);
      this.used -= size;
      this.evict(oldest);
    }
  }

  /** The owner dropped `entry` itself: its bytes are free again (once; an entry not kept changes nothing). */
  release(entry: Entry): void {
    const size = this.kept.get(entry);
    if (size === undefined) return;
    this.kept.delete(entry);
    this.used -= size;
  }
}
