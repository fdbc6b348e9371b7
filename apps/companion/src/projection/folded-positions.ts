import { Injectable } from '@nestjs/common';
import type { ConversationEvent } from '@rudder/contracts';

/**
 * What this process's folds committed, handed right after each fold's transaction to whoever
 * listens: the reads waiting for a view to reach a position (`ReadFloorInterceptor`), which then
 * go on at the commit instead of at their next poll. Only this process's folds: a read waiting
 * on a conversation another companion folds (its partition is that one's) is found by the
 * waiting reads' shared poll of the database.
 */
@Injectable()
export class FoldedPositions {
  private readonly listeners = new Set<(folded: readonly ConversationEvent[]) => void>();

  /**
   * A fold committed `events`: each one's conversation's view is at its position or later.
   * Handed as they are (no work here on the fold's path): a listener with nothing waiting returns at once.
   */
  committed(events: readonly ConversationEvent[]): void {
    if (events.length === 0) return;
    for (const listener of this.listeners) listener(events);
  }

  /** Calls `listener` after every fold this process commits; the returned function stops it. */
  listen(listener: (folded: readonly ConversationEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
