import type { ConversationEvent } from '@rudder/contracts';
import { evolve, initialState, mayAccess, type ConversationState } from '@rudder/conversation';

type Access = Pick<ConversationState, 'owner' | 'grants'>;

/** What a stream does with an event once the reader's access at its position is known. */
export type Reading = 'carry' | 'withhold' | 'revoked';

/**
 * One stream's reader and what they may read, folded along the conversation's log.
 *
 * Owner and grants are facts of the log (`conversation.opened`, `access.granted`), folded by
 * the decider's own `evolve`, so "may this subject read the conversation at this event's
 * position" is exact, never a race with a lagging view. It starts from the companion's
 * access as of a position (`asOf`: the status read when the stream opened); every event
 * after it must then be folded here in log order (`EventStream` sees to that: it fills any
 * gap from the store before it folds an event past one).
 *
 * `see` answers for one event after folding it: carry it, withhold it (the reader may not
 * read the conversation, e.g. a key nobody owns yet, or another's), or `revoked`: the reader
 * could read until this event and may not any more — the stream ends.
 */
export class ReaderAccess {
  private access: Access;
  private folded: number;
  private granted: number | null = null;

  /**
   * The position of the grant from which the reader may read, when this stream folded it (the
   * reader could not read before it); null when the reader could read where the stream began,
   * or since the conversation opened (nothing precedes that). What the log holds before the
   * grant is not the reader's to be streamed: a stream carries a turn's tokens only when the
   * turn started after it (`EventStream`).
   */
  get grantedAt(): number | null {
    return this.granted;
  }

  constructor(
    readonly subject: string,
    start: Access,
    asOf: number,
  ) {
    this.access = { owner: start.owner, grants: { ...start.grants } };
    this.folded = asOf;
  }

  /** The position up to which every access fact of the log is folded in. */
  get position(): number {
    return this.folded;
  }

  /** Nobody owns the conversation yet (no `conversation.opened` folded). */
  get unowned(): boolean {
    return this.access.owner === null;
  }

  mayRead(): boolean {
    return mayAccess(this.access, this.subject, 'read');
  }

  /**
   * Folds `event` (the next of the log after `position`, or one at or before it, which
   * changes nothing) and says what the stream does with it.
   */
  see(event: ConversationEvent): Reading {
    const before = this.mayRead();
    if (event.position > this.folded) {
      this.folded = event.position;
      if (event.type === 'conversation.opened' || event.type === 'access.granted') {
        const state: ConversationState = { ...initialState(), ...this.access };
        const { owner, grants } = evolve(state, event);
        this.access = { owner, grants };
      }
    }
    if (this.mayRead()) {
      if (!before && event.type === 'access.granted') this.granted = event.position;
      return 'carry';
    }
    return before ? 'revoked' : 'withhold';
  }
}

/**
 * Whether `event` begins what the reader must know: a conversation's first event is its
 * `conversation.opened` (nothing before it can be read by anyone), so the access after it is
 * exact whatever came before.
 */
export const opensConversation = (event: ConversationEvent): boolean => event.type === 'conversation.opened';
