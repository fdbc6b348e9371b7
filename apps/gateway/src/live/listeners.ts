import type { ConversationEvent } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import type { KeptToken } from './kept-tokens';

/** What the live consumer hands each open stream (and each write waiting for a decision) of a conversation. */
export type LiveListener = {
  event(event: ConversationEvent): void;
  /**
   * A conversation's events a commit announced as it committed (`Announcement`), ahead of their
   * records: `after` is the position of the conversation's last event before them.
   */
  announced?(events: readonly ConversationEvent[], after: number): void;
  token(token: KeptToken): void;
  /** The gateway is shutting down: finish the stream. */
  end(): void;
};

/** The listeners of each conversation, handed what comes for it. */
export class Listeners {
  private readonly byConversation = new Map<string, Set<LiveListener>>();

  constructor(private readonly log: Log) {}

  /** Adds a listener of a conversation; the returned function removes it. */
  add(conversation: string, listener: LiveListener): () => void {
    const map = this.byConversation;
    let set = map.get(conversation);
    if (!set) map.set(conversation, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && map.get(conversation) === set) map.delete(conversation);
    };
  }

  /** Whether any listener of the conversation is there. */
  has(conversation: string): boolean {
    return this.byConversation.has(conversation);
  }

  /** How many listeners of the conversation are there. */
  count(conversation: string): number {
    return this.byConversation.get(conversation)?.size ?? 0;
  }

  /**
   * Over a copy (a listener may unsubscribe while records are handed out), and one failing
   * listener never fails the consumer: that would redeliver the batch to every other one.
   */
  handOut(conversation: string, give: (listener: LiveListener) => void): void {
    for (const listener of [...(this.byConversation.get(conversation) ?? [])]) {
      try {
        give(listener);
      } catch (error) {
        this.log.warn('a stream failed to take a record; ending it', { conversation, error: String(error) });
        listener.end();
      }
    }
  }

  /** Ends every listener and forgets them all. */
  endAll(): void {
    for (const set of this.byConversation.values()) for (const listener of set) listener.end();
    this.byConversation.clear();
  }
}
