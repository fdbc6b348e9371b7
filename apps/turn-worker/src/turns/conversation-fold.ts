import type { ConversationEvent } from '@rudder/contracts';
import type { TurnState } from '@rudder/agent';
import type { ConversationState } from '@rudder/conversation';
import { readConversation, readConversationFromSnapshot, storeSnapshot, type Seen } from '@rudder/event-store';
import type { Log, Pool } from '@rudder/runtime';
import type { ConversationNews } from '../ingest/ingest-inputs';
import { CONVERSATION_FOLD_VERSION, emptyConversation, evolveConversation, fromSnapshot, type Conversation } from './conversation';

export type ConversationFoldDeps = {
  pool: Pool;
  /** How many earlier turns the fold keeps (the largest `history.turns` of the agents; null: every one). */
  historyKept: number | null;
  /** A snapshot of the fold is stored once the log has grown by this many events since the last one. */
  snapshotEvery: number;
  log: Log;
};

/**
 * One conversation as its runner holds it: the decider's fold of its log (`evolveConversation`:
 * the state decisions read and the running turn the agent loop drives — the one copy of
 * either in the worker), folded strictly in log order, so what it holds is always what folding
 * the log from the start gives. Forgotten, it is read again from the log.
 */
export class ConversationFold {
  /** Null before the first read, and once forgotten. */
  private folded: Conversation | null = null;
  /** Every event at or below this position is folded in. */
  private readUpTo = 0;
  /** Events folded since the latest snapshot read or stored (positions are global: not their difference). */
  private sinceSnapshot = 0;

  constructor(
    private readonly key: string,
    private readonly deps: ConversationFoldDeps,
  ) {}

  /** The conversation as of the last event folded; null before the first read. */
  get conversation(): Conversation | null {
    return this.folded;
  }

  /** Its state and the position it is folded up to; undefined before the first read. */
  seen(): Seen<ConversationState> | undefined {
    return this.folded === null ? undefined : { position: this.readUpTo, state: this.folded.state };
  }

  /**
   * Folds the events after what is held, in log order. Answers the running turn as it was when
   * its `turn.ended` was folded, if these events ended it (the fold then holds no running turn).
   */
  apply(events: readonly ConversationEvent[]): TurnState | null {
    let ended: TurnState | null = null;
    for (const event of events) {
      if (event.position <= this.readUpTo) continue;
      const running = this.folded?.running ?? null;
      this.folded = evolveConversation(this.folded ?? emptyConversation(this.deps.historyKept), event);
      this.readUpTo = event.position;
      this.sinceSnapshot += 1;
      if (event.type === 'turn.ended' && running?.id === event.data.turn) ended = running;
    }
    return ended;
  }

  /**
   * Folds `news` if it follows exactly what is held, or, nothing held, if it is the
   * conversation's first events (`after` 0: the two writers of the event store set a
   * conversation's `last_position` with every event they insert, so 0 is an empty log — a new
   * conversation's first turn starts without reading it back); false otherwise (the
   * first read starts from the snapshot).
   */
  take(news: ConversationNews): boolean {
    if (this.folded === null && news.after === 0) {
      this.folded = emptyConversation(this.deps.historyKept);
      this.readUpTo = this.sinceSnapshot = 0;
    }
    if (this.folded === null || this.readUpTo !== news.after) return false;
    this.apply(news.events);
    return true;
  }

  /** Reads what the log holds after what is held: from the start, the latest snapshot and only the events after it. */
  async catchUp(): Promise<void> {
    const { pool, historyKept } = this.deps;
    if (this.folded) {
      this.apply(await readConversation(pool, this.key, this.readUpTo));
      return;
    }
    // The whole log when the snapshot kept fewer earlier turns than this worker's agents need.
    const { snapshot, events } = await readConversationFromSnapshot(pool, this.key, CONVERSATION_FOLD_VERSION);
    const held = snapshot && fromSnapshot(snapshot.fold as Conversation, historyKept);
    this.folded = held || emptyConversation(historyKept);
    this.readUpTo = held ? snapshot.position : 0;
    this.sinceSnapshot = 0;
    this.apply(snapshot && !held ? await readConversation(pool, this.key, 0) : events);
  }

  /** Between turns, once the log has grown by `snapshotEvery` events: a snapshot of the fold, so a next read is short. */
  async snapshotIfDue(): Promise<void> {
    const { folded } = this;
    if (!folded || folded.running || this.sinceSnapshot < this.deps.snapshotEvery) return;
    try {
      await storeSnapshot(this.deps.pool, this.key, { position: this.readUpTo, version: CONVERSATION_FOLD_VERSION, fold: folded });
      this.sinceSnapshot = 0;
    } catch (error) {
      // Tried again after as many more events, not between every turn: a snapshot the database
      // refuses must not add a failing statement to each of the conversation's turns.
      this.sinceSnapshot = 0;
      this.deps.log.warn('storing a snapshot failed; the next read starts from an older one (or the log)', { conversation: this.key, error: String(error) });
    }
  }

  /** What is stored is the truth: forget the fold, and read it again. */
  forget(): void {
    this.folded = null;
    this.readUpTo = this.sinceSnapshot = 0;
  }
}
