import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { conversationRules, type ConversationState } from '@rudder/conversation';
import { appendToConversation, groupedWrites, type ShardedRelay, type Seen, type UnchangedWriter, type Written } from '@rudder/event-store';
import type { Pool, Sharded } from '@rudder/runtime';
import type { HeldEpochs } from './held-epochs';

export type TurnStoreOptions = {
  /** The event store's primaries: a conversation is read and written on its partition's. */
  pools: Sharded<Pool>;
  /** The epochs this worker holds, and when it last proved each: every write is checked against them. */
  held: HeldEpochs;
  /** Publishes what each write stored (given its partition: the relay of its primary). */
  relay: Pick<ShardedRelay, 'enqueue'>;
  /** The channel every write is announced on as it commits, now (null: none). */
  announce?: () => string | null;
  /** Something is due at `dueAt` (an approval's timeout, a schedule's time): wake its conversation then (`Deadlines`; absent: only the store's deadlines read at an assignment wake it). */
  wakeAt?: (dueAt: string) => void;
};

/**
 * The event store as this worker's conversation runners use it, one for them all: a write of
 * one conversation under the epochs the worker holds, decided under the conversation's lock
 * (`appendToConversation`), the writes made at the same moment sharing one statement and one
 * commit (`groupedWrites`), each announced as it commits; then what follows a write (`handOver`):
 * the relay publishes it, and a deadline it stored wakes its conversation then. Each primary
 * has its own grouped writer: a statement, like a transaction, never spans two.
 */
export class TurnStore {
  private readonly writeUnchanged: readonly UnchangedWriter<ConversationState>[];

  constructor(private readonly options: TurnStoreOptions) {
    this.writeUnchanged = options.pools.all.map((pool) => groupedWrites(pool, conversationRules, { announce: options.announce }));
  }

  /** The primary that holds the conversations of `partition`. */
  poolFor(partition: number): Pool {
    return this.options.pools.forPartition(partition);
  }

  /**
   * Appends what `decide` makes of the conversation's state under its lock: in one statement when
   * the log has not moved since `seen`, else in a transaction on the stored state. A write that
   * succeeded proves the partition's epoch as of when it was sent.
   */
  async append(conversation: string, partition: number, seen: Seen<ConversationState>, decide: (state: ConversationState) => DomainEvent[]): Promise<Written & { earlier: ConversationEvent[] }> {
    const { held, announce } = this.options;
    const sentAt = held.now();
    const written = await appendToConversation(this.poolFor(partition), conversationRules, conversation, held.epochs(), decide, seen, this.writeUnchanged[this.options.pools.shardOf(partition)], { announce });
    held.proven(partition, sentAt);
    return written;
  }

  /** After a write was folded: the relay publishes it, and the conversation's earliest deadline (`dueAt`, if any) wakes it then. */
  handOver(written: Written, partition: number, dueAt: string | null | undefined): void {
    this.options.relay.enqueue(written, partition);
    if (dueAt) this.options.wakeAt?.(dueAt);
  }

  /** A conversation folded here is due at `dueAt` (a schedule an ingested input made): wake it then, if nothing wakes this worker earlier. */
  wakeAt(dueAt: string): void {
    this.options.wakeAt?.(dueAt);
  }

  /** Resolves when the partition is still this worker's (reading its epoch after a pause past the session timeout); else throws FencedError. */
  check(partition: number): Promise<void> {
    return this.options.held.check(partition);
  }
}
