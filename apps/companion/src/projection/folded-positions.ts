import { Injectable } from '@nestjs/common';
import type { ConversationEvent } from '@rudder/contracts';

/** Each conversation's position a fold's transaction committed its view at, at least. */
export type Folded = ReadonlyMap<string, number>;

/**
 * What this process's folds committed, handed right after each fold's transaction to whoever
 * listens: the reads waiting for a view to reach a position (`ReadFloorInterceptor`), which then
 * go on at the commit instead of at their next poll. Only this process's folds: a read waiting
 * on a conversation another companion folds (its partition is that one's) is found by the
 * waiting reads' shared poll of the database.
 */
@Injectable()
export class FoldedPositions {
  private readonly listeners = new Set<(folded: Folded) => void>();

  /** A fold committed `events`: each one's conversation's view is at its position or later. */
  committed(events: readonly ConversationEvent[]): void {
    if (this.listeners.size === 0 || events.length === 0) return;
    const folded = new Map<string, number>();
    for (const { conversation, position } of events) folded.set(conversation, Math.max(folded.get(conversation) ?? 0, position));
    for (const listener of this.listeners) listener(folded);
  }

  /** Calls `listener` after every fold this process commits; the returned function stops it. */
  listen(listener: (folded: Folded) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
