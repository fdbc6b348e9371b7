import type { ConversationEvent } from '@rudder/contracts';
import type { Log, Pool } from '@rudder/runtime';
import { following } from './outbox-following';
import { markPublished, readConversationsAfter, readOwnedOutbox } from './outbox-statements';
import { toConversationEvent, type EventRow } from './stored-event';
import { byKeyBytes, type Written } from './writes';

export type OutboxRelayOptions = {
  pool: Pool;
  /**
   * Sends events to the bus in the order given; resolves once the bus has them. `traces[i]`:
   * the W3C traceparent stored with `events[i]` (null without), for the publication to join it.
   */
  publish(events: readonly ConversationEvent[], traces: readonly (string | null)[]): Promise<void>;
  /** The partitions whose conversations this process owns; a sweep publishes only those. */
  ownedPartitions(): readonly number[];
  /** Called between publishing and marking (the crash tests kill the process here). */
  afterPublish?: () => void;
  log: Log;
  retryMs?: number;
  batchSize?: number;
  /** How often the table is swept even if nothing was enqueued (commits whose enqueue never came). */
  sweepMs?: number;
  /** How long published events may wait to be marked (a read of the table marks them sooner). */
  markAfterMs?: number;
};

export type OutboxRelay = {
  /**
   * A commit just made, as the writer got it back (`Written` of ./append): published as it is
   * when it follows what was published of its conversations (a conversation missing from its
   * `before` does not), else from the table.
   */
  enqueue(commit: Written): void;
  /** Publishes every unpublished event of the owned partitions (after an assignment, say). */
  sweep(): void;
  /** Resolves when everything handed over so far has been published and marked, or has failed. */
  idle(): Promise<void>;
  stop(): Promise<void>;
};

/** Conversations whose last published position a relay keeps; past it, the oldest tenth are forgotten (read from the start again, once). */
const PUBLISHED_KEPT = 50_000;

/**
 * The relay of the transactional outbox: each conversation's events after its watermark,
 * `published_position` of its row (the view `event_store.outbox`).
 *
 * Every publication is a step on one chain, so publications never overlap and per
 * conversation they go out in log order, every event. A step publishes the commits handed
 * over since the last one began and, when asked, what the table holds unpublished.
 *
 * **From memory** when that is exactly the next thing to publish of the conversation: per
 * conversation the relay keeps the highest position it published, and every earlier event of
 * it is published (see below). A commit's events of a conversation whose last position
 * `before` them is at most that follow it with nothing between (the commit held the
 * conversation's row lock, and `before` is the row's `last_position` under it), so they are
 * published as they are, no read. The first commit of a conversation has `before` 0.
 *
 * **From the table** otherwise: a commit whose enqueue came late (a slow dead-letter send in
 * between), one that never came (a COMMIT whose acknowledgement was lost), a conversation this
 * relay has not published yet (a new owner): publishing commits in `enqueue` order would let
 * newer events out first and leave others behind. Then the conversation is read
 * after the highest position this relay published of it or its stored watermark, whichever is
 * higher (0 when neither), by a range of the `(conversation, position)` index. That skips
 * nothing: a conversation's positions are visible in their order (its writes hold its row lock
 * until they commit), and each read takes every visible event of the conversation after that
 * point in position order, so when a relay published position p of a conversation, every
 * earlier one of it was visible to that read or an earlier one, and published by it. All of a
 * conversation's commits in one step go one way: one that does not follow sends the
 * conversation's others to the table too. A sweep of the owned partitions runs every
 * `sweepMs` (and after an assignment, a failure, a start) for commits nobody enqueued: it
 * reads every owned conversation whose `last_position` (written by the statement that appends
 * its events) is past its watermark (a partial index of them), so it finds a write once it is
 * committed, never before.
 *
 * The watermark of what was published is stored up to `markAfterMs` later and rides on the
 * next read of the table when one comes first; else it is a statement of its own, one row per
 * conversation published since (an update that never lowers one: a relay that lost the
 * partition may still mark what it published). A crash before it is stored publishes again
 * (up to `markAfterMs` of events); consumers deduplicate by event id.
 */
export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  return new Relay(options);
}

/** The relay described above: what it keeps between steps, its chain, and the steps on it. */
class Relay implements OutboxRelay {
  private readonly retryMs: number;
  private readonly batchSize: number;
  private readonly markAfterMs: number;
  /** Every step and every mark is a link of this chain, so none overlaps another. */
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private markTimer: NodeJS.Timeout | undefined;
  private readonly backstop: NodeJS.Timeout;
  /** A step is on the chain and has not started yet: what is handed over now, it will take. */
  private stepWaiting = false;
  /** The waiting step reads the owned partitions' whole outbox. */
  private wholeTable = true;
  /** Conversations the waiting step reads from the table (after what this relay published of each). */
  private readonly due = new Set<string>();
  /** Commits handed over since the last step began. */
  private held: Written[] = [];
  /** Per conversation, the highest position this relay published: every earlier one of it is published (see above). */
  private readonly published = new Map<string, number>();
  /**
   * Per conversation, the highest position published and not stored as its watermark yet: the
   * next read of the table stores them, or `mark` does.
   */
  private unmarked = new Map<string, number>();

  constructor(private readonly options: OutboxRelayOptions) {
    this.retryMs = options.retryMs ?? 1000;
    this.batchSize = options.batchSize ?? 500;
    this.markAfterMs = options.markAfterMs ?? 200;
    this.backstop = setInterval(() => this.sweep(), options.sweepMs ?? 2000);
    this.backstop.unref();
    this.sweep(); // a new process first publishes what a previous one may have left
  }

  enqueue(commit: Written): void {
    if (commit.stored.length === 0) return;
    this.held.push(commit);
    this.schedule();
  }

  sweep(): void {
    this.wholeTable = true;
    this.schedule();
  }

  idle(): Promise<void> {
    this.markOnChain();
    return this.chain;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.backstop);
    clearTimeout(this.retry);
    await this.chain;
    await this.mark().catch(() => undefined); // what stays unmarked is published again by the next owner
  }

  /** A step on the chain (one waiting is enough: it takes whatever is handed over before it starts). */
  private schedule(): void {
    if (this.stopped || this.stepWaiting) return;
    this.stepWaiting = true;
    this.chain = this.chain
      .then(() => {
        this.stepWaiting = false;
        return this.step();
      })
      .catch((error: unknown) => this.fellBehind(error));
  }

  /** A step failed: what it was to publish is read again, with the rest of the table, after `retryMs`. */
  private fellBehind(error: unknown): void {
    this.wholeTable = true;
    this.options.log.warn('outbox relay fell behind; will publish from the table', { error: String(error) });
    if (!this.stopped && !this.retry) {
      this.retry = setTimeout(() => {
        this.retry = undefined;
        this.sweep();
      }, this.retryMs);
    }
  }

  /** One step of the chain: the commits that follow, from memory; then what is due, from the table. */
  private async step(): Promise<void> {
    const commits = this.held;
    this.held = [];
    const fromMemory = this.takeFromMemory(commits);
    const conversations = this.wholeTable ? null : [...this.due];
    this.wholeTable = false;
    this.due.clear();
    if (fromMemory.events.length > 0) {
      await this.options.publish(fromMemory.events, fromMemory.traces);
      this.wasPublished(fromMemory.events);
    }
    if (conversations === null || conversations.length > 0) await this.publishFromTable(conversations);
    this.markLater();
  }

  /**
   * The commits handed over that follow what was published, per conversation (to publish as
   * they are); the conversations that do not are added to `due`, to read from the table instead.
   */
  private takeFromMemory(commits: readonly Written[]): { events: ConversationEvent[]; traces: (string | null)[] } {
    const { events, traces, fromTable } = following(commits, this.published, (c) => this.wholeTable || this.due.has(c));
    for (const c of fromTable) this.due.add(c);
    return { events, traces };
  }

  /**
   * Reads the next rows to publish, in statements that also store the watermarks of what was
   * published before, and publishes them: the owned partitions' whole outbox (null), or the
   * given conversations' rows after what this relay published of each.
   */
  private async publishFromTable(conversations: readonly string[] | null): Promise<void> {
    for (;;) {
      const rows = await this.readUnpublished(conversations);
      this.unmarked = new Map();
      if (rows.length === 0) return;
      const events = rows.map(toConversationEvent);
      await this.options.publish(events, rows.map((r) => r.trace));
      this.wasPublished(events);
      if (rows.length < this.batchSize) return;
    }
  }

  private readUnpublished(conversations: readonly string[] | null): Promise<EventRow[]> {
    const owned = this.options.ownedPartitions();
    return conversations === null
      ? readOwnedOutbox(this.options.pool, this.marks(), owned, this.batchSize)
      : readConversationsAfter(this.options.pool, this.marks(), owned, this.batchSize, conversations, conversations.map((c) => this.published.get(c) ?? 0));
  }

  private wasPublished(events: readonly ConversationEvent[]): void {
    this.options.afterPublish?.();
    for (const e of events) {
      const upTo = Math.max(e.position, this.published.get(e.conversation) ?? 0);
      this.published.set(e.conversation, upTo);
      this.unmarked.set(e.conversation, upTo);
    }
    const { published } = this;
    if (published.size > PUBLISHED_KEPT) for (const key of [...published.keys()].slice(0, published.size / 10)) published.delete(key);
  }

  /** What was published and not marked is marked `markAfterMs` later, unless a read of the table marks it first. */
  private markLater(): void {
    if (this.unmarked.size === 0 || this.markTimer || this.stopped) return;
    this.markTimer = setTimeout(() => {
      this.markTimer = undefined;
      this.markOnChain();
    }, this.markAfterMs);
    this.markTimer.unref();
  }

  private markOnChain(): void {
    this.chain = this.chain
      .then(() => this.mark())
      .catch((error: unknown) => this.options.log.warn('marking published events failed; the next read marks them', { error: String(error) }));
  }

  private async mark(): Promise<void> {
    clearTimeout(this.markTimer);
    this.markTimer = undefined;
    if (this.unmarked.size === 0) return;
    await markPublished(this.options.pool, this.marks());
    this.unmarked = new Map();
  }

  /** The watermarks to store, as the statements' two arrays, in key order (the order their rows are locked in). */
  private marks(): [string[], number[]] {
    const keys = [...this.unmarked.keys()].sort(byKeyBytes);
    return [keys, keys.map((k) => this.unmarked.get(k)!)];
  }
}
