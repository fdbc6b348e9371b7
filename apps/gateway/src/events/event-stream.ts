import type { ConversationEvent, StreamCursor } from '@rudder/contracts';
import type { KeptToken } from '../live/kept-tokens';
import type { LiveListener } from '../live/listeners';
import { opensConversation, type ReaderAccess } from './reader-access';
import { RUDDER_SSE, type StreamFormat, type StreamSink } from './sse';

export type EventStreamOptions = {
  /** Where the client is (Last-Event-ID or `?after=`); null: live from now on, no history. */
  after: StreamCursor | null;
  /**
   * Who reads, and what they may read as of a position, asked once the stream is subscribed;
   * null in open development mode (everyone reads everything). Rejects (403, say) to refuse
   * the stream before anything is sent.
   */
  reader: () => Promise<ReaderAccess | null>;
  /**
   * The stored events after a position, oldest first, a page at a time, from a store that has
   * folded the conversation at least up to `floor`: every event after `after` up to the last
   * one given, none missing.
   */
  stored: (after: number, floor: number) => AsyncIterable<ConversationEvent[]>;
  /** The events after a position this gateway saw lately, oldest first: a tail of the log, none missing inside it. */
  recent: (after: number) => ConversationEvent[];
  /** The kept tokens a client at the cursor has not had (`KeptTokens.after`), in offset order. */
  replayTokens: (after: StreamCursor) => KeptToken[];
  /** The highest position of the conversation this gateway has seen lately, if any. */
  latestPosition: () => number | null;
  sink: StreamSink;
  /**
   * How a carried event or token is written: Rudder's SSE messages (`sseEvent`, `sseToken`) by
   * default. Another door (the Responses protocol) writes its own translation of the same
   * events; an empty string writes nothing.
   */
  format?: StreamFormat;
  /** Told why the stream ended on its own (a revoke, a gap the store could not fill). */
  ended?: (reason: string) => void;
};

type Item = { event: ConversationEvent } | { token: KeptToken };

/** How many tokens a stream holds while nobody owns its conversation (a first answer's, at most). */
const MAX_UNOWNED_TOKENS = 1000;
/** How many turns started after the reader's grant a stream remembers (tokens come for the latest few only). */
const TURNS_AFTER_GRANT_KEPT = 64;

/**
 * One client's event stream: what it missed, then live, in position order, each position once,
 * and only what its reader may read.
 *
 * Contract: the stream is subscribed to the live consumer before `start()` asks for the
 * reader's access and the history; live records are held back until the history is out.
 *
 * The log reaches a stream two ways: the store (the companion: contiguous from where it was
 * asked, as far as it has folded) and the tail (what this gateway saw lately and everything
 * handed to the stream since it subscribed: contiguous from its first record on). Between the
 * two there may be a gap: events the gateway consumed before the stream subscribed and the
 * store had not folded yet when it was asked. Before the stream carries the tail's first
 * event past what it knows, it fills that gap from the store, waiting for the store to reach
 * that event (`stored(known, floor)`), so
 * - a resume delivers every event after its cursor, in order, or ends (the client resumes
 *   again); it never skips one;
 * - the reader's access is folded from every event in log order (`ReaderAccess`): an event is
 *   carried only if the reader may read the conversation at its position, a revoke ends the
 *   stream, and a stream opened before the owner's first write carries nothing of it.
 *
 * Announced events (`announced`: what a commit stored, as it committed, ahead of its records on
 * `agent.events`) are carried at once when they follow the last event the stream has been
 * through — nothing waits before them, and every event up to their `after` is through — and
 * are otherwise left to their records, which come in order (a step reaches a client without
 * the outbox relay's produce and the live consumer's fetch in between).
 *
 * Duplicates (the outbox relay may publish twice; the store and the tail overlap; announced
 * events come again as records) are dropped by position. Tokens go on a second track: replayed from the kept ones after the cursor's
 * token offset, then live when their offset is above the last one sent, each while the reader
 * may read — and, for a reader granted while the stream ran, only a turn's that started after
 * the grant. The two tracks have no order between them, so each message's id carries both: an
 * event's is its position, a token's `<last position sent>.<its offset>`; in a replay a token
 * goes after the event it followed when it arrived (its anchor).
 */
export class EventStream implements LiveListener {
  private phase: 'starting' | 'live' | 'ended' = 'starting';
  private opened = false;
  private reader: ReaderAccess | null = null;
  /** Every event of the conversation up to here has been through this stream (folded, and carried when it should be). */
  private known = Number.POSITIVE_INFINITY;
  /** The tail's records have started: from now on they follow each other with none missing. */
  private tailJoined = false;
  private lastSent: number | null;
  private lastToken: number | null;
  /** Tail records waiting their turn, in arrival order. */
  private pending: Item[] = [];
  private pumping = false;
  /** Tokens that came while nobody owned the conversation: carried once it is the reader's, else dropped. */
  private unownedTokens: KeptToken[] = [];
  /** The turns started after the reader's grant (`ReaderAccess.grantedAt`): only theirs are the reader's tokens, the latest few. */
  private readonly turnsAfterGrant = new Set<string>();
  /**
   * The last event the stream has been through: the tail's and the store's follow each other
   * from the first on, so an announcement after it follows too. 0 before any: positions start at
   * 1, so an announcement `after` 0 holds a conversation's first events.
   */
  private through = 0;

  constructor(private readonly options: EventStreamOptions) {
    this.lastSent = options.after?.position ?? null;
    this.lastToken = options.after?.tokenOffset ?? null;
  }

  /**
   * Asks for the reader's access, replays what the client missed, then goes live. Rejects
   * before anything is sent when access is refused or the history cannot be had.
   */
  async start(): Promise<void> {
    const { after } = this.options;
    this.reader = await this.options.reader();
    if (this.reader) this.known = this.reader.position;
    if (after === null) {
      if (this.stopped()) return;
      this.openSink();
    } else {
      if (!this.reader) this.known = after.position;
      await this.replay(after);
      if (this.stopped()) return;
    }
    this.phase = 'live';
    void this.pump();
  }

  event(event: ConversationEvent): void {
    this.take({ event });
  }

  /**
   * Carried now when they follow what the stream has been through (`through`) and nothing waits
   * before them; else their records bring them, in order.
   */
  announced(events: readonly ConversationEvent[], after: number): void {
    if (this.phase !== 'live' || this.pumping || this.pending.length > 0 || this.through !== after) return;
    for (const event of events) {
      this.see(event, true);
      if (this.stopped()) return;
    }
  }

  token(token: KeptToken): void {
    this.take({ token });
  }

  end(): void {
    if (this.stopped()) return;
    this.phase = 'ended';
    this.pending = [];
    this.options.sink.end();
  }

  private take(item: Item): void {
    if (this.stopped()) return;
    this.pending.push(item);
    if (this.phase === 'live') void this.pump();
  }

  /**
   * The stored history after the cursor (from further back when the reader's access is known
   * only up to an earlier position: those events are folded, not carried), the kept tokens
   * after it, and this gateway's recent tail ahead of what was held back meanwhile.
   */
  private async replay(after: StreamCursor): Promise<void> {
    const tokens = this.options.replayTokens(after);
    const floor = this.options.latestPosition() ?? 0;
    try {
      for await (const page of this.options.stored(Math.min(after.position, this.known), floor)) {
        if (this.stopped()) return;
        this.openSink();
        for (const event of [...page].sort(byPosition)) {
          while (tokens.length > 0 && tokens[0].anchor < event.position) this.sendToken(tokens.shift()!);
          this.fromStore(event);
          if (this.stopped()) return;
        }
        // A long history goes out as fast as the client takes it, not into the response's buffer.
        await this.options.sink.drained?.();
      }
    } catch (error) {
      // Before the head: the request answers the error. After it: the client resumes from what it has.
      if (!this.opened) throw error;
      this.finish('the stored history could not be read');
      return;
    }
    if (this.stopped()) return;
    this.openSink();
    const recent: Item[] = this.options.recent(after.position).map((event) => ({ event }));
    this.pending = [...inReplayOrder(recent, tokens), ...this.pending];
  }

  /**
   * Carries the tail's records in order. A record past what the stream knows, with records
   * possibly missing before it, waits until the store has filled the gap.
   */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.pending.length > 0 && this.phase === 'live') {
        const item = this.pending[0];
        if ('event' in item && this.gapBefore(item.event)) {
          await this.fillGap(item.event.position);
          continue;
        }
        this.pending.shift();
        if ('event' in item) this.fromTail(item.event);
        else this.sendToken(item.token);
      }
    } catch {
      this.finish('the store could not fill a gap before a live event');
    } finally {
      this.pumping = false;
    }
  }

  private gapBefore(event: ConversationEvent): boolean {
    return event.position > this.known && !this.tailJoined && !opensConversation(event);
  }

  /** Everything stored between what the stream knows and `position`, once the store has it. */
  private async fillGap(position: number): Promise<void> {
    for await (const page of this.options.stored(this.known, position)) {
      for (const event of [...page].sort(byPosition)) {
        if (this.phase !== 'live') return;
        this.fromStore(event);
      }
    }
    // The store has folded up to `position`: nothing before it can be missing any more.
    this.known = Math.max(this.known, position - 1);
    this.tailJoined = true;
  }

  /** A stored event: carried when the client asked for history, folded in any case. */
  private fromStore(event: ConversationEvent): void {
    this.see(event, this.options.after !== null);
  }

  /** The tail's records come in log order with none missing, so once one is through (none missing before it), so is the rest. */
  private fromTail(event: ConversationEvent): void {
    this.tailJoined = true;
    this.see(event, true);
  }

  private see(event: ConversationEvent, carry: boolean): void {
    if (event.position > this.known) this.known = event.position;
    if (event.position > this.through) this.through = event.position;
    const reading = this.reader?.see(event) ?? 'carry';
    if (reading === 'revoked') return this.finish(`${this.reader!.subject} may no longer read the conversation`);
    const grantedAt = this.reader?.grantedAt ?? null;
    if (grantedAt !== null && event.type === 'turn.started' && event.position > grantedAt) {
      this.turnsAfterGrant.add(event.data.turn);
      if (this.turnsAfterGrant.size > TURNS_AFTER_GRANT_KEPT) this.turnsAfterGrant.delete(this.turnsAfterGrant.values().next().value!);
    }
    if (reading === 'carry' && carry) this.sendIfNew(event);
    if (this.unownedTokens.length > 0 && !this.reader?.unowned) {
      const held = this.unownedTokens;
      this.unownedTokens = [];
      if (reading === 'carry') for (const token of held) this.sendToken(token);
    }
  }

  /** A method, not a field test: a call in between may have ended the stream, which narrowing would not see. */
  private stopped(): boolean {
    return this.phase === 'ended';
  }

  private finish(reason: string): void {
    if (this.stopped()) return;
    this.options.ended?.(reason);
    this.end();
  }

  private openSink(): void {
    if (this.opened) return;
    this.opened = true;
    this.options.sink.open();
  }

  private sendIfNew(event: ConversationEvent): void {
    if (this.lastSent !== null && event.position <= this.lastSent) return;
    this.lastSent = event.position;
    const chunk = (this.options.format ?? RUDDER_SSE).event(event);
    if (chunk !== '') this.options.sink.write(chunk);
  }

  private sendToken(token: KeptToken): void {
    if (this.reader && !this.reader.mayRead()) {
      // Nobody owns the conversation yet: the tokens may be of the reader's own first turn, whose
      // `conversation.opened` has not reached the stream (two topics, no order between them).
      if (this.reader.unowned) this.unownedTokens = [...this.unownedTokens.slice(1 - MAX_UNOWNED_TOKENS), token];
      return;
    }
    // Granted while this stream ran: a turn that started before the grant is not the reader's to
    // be streamed (its tokens may come after the grant: two topics, no order between them).
    if (this.reader?.grantedAt != null && !this.turnsAfterGrant.has(token.record.turn)) return;
    if (this.lastToken !== null && token.offset <= this.lastToken) return;
    this.lastToken = token.offset;
    const position = this.lastSent ?? this.options.latestPosition() ?? 0;
    const chunk = (this.options.format ?? RUDDER_SSE).token(token, { position, tokenOffset: token.offset });
    if (chunk !== '') this.options.sink.write(chunk);
  }
}

const byPosition = (a: ConversationEvent, b: ConversationEvent) => a.position - b.position;

/** Events by position, each token after the event it followed (its anchor), tokens by offset. */
function inReplayOrder(events: Item[], tokens: KeptToken[]): Item[] {
  const key = (item: Item): [number, number, number] =>
    'event' in item ? [item.event.position, 0, 0] : [item.token.anchor, 1, item.token.offset];
  return [...events, ...tokens.map((token) => ({ token }))].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
}
