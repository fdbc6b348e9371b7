import type { ConversationEvent, TokenRecord } from '@rudder/contracts';
import { sseEvent, sseToken } from './sse';

/** What the live consumer hands each open stream of a conversation. */
export type LiveListener = {
  event(event: ConversationEvent): void;
  token(token: TokenRecord): void;
  /** The gateway is shutting down: finish the stream. */
  end(): void;
};

/** Where a stream's bytes go: the HTTP response, in production. */
export type StreamSink = {
  /** Sends the response head; called once, before the first write. */
  open(): void;
  write(chunk: string): void;
  end(): void;
};

export type EventStreamOptions = {
  /** The last position the client has (Last-Event-ID or `?after=`); null: live from now on, no replay. */
  after: number | null;
  /** The events after a position that are already out (stored, or recently seen live), in any order. */
  replay: (after: number) => Promise<ConversationEvent[]>;
  sink: StreamSink;
};

/**
 * One client's event stream: what it missed, then live, in position order, each position once.
 *
 * Contract: the stream is subscribed to the live consumer before `start()` asks for the
 * replay, and holds live events back until the replay is out; then it flushes them, skipping
 * positions already sent. An event published during the replay is in the replay, in the held
 * back events, or both — never in neither. From then on a live event is sent when its
 * position is above the last one sent: duplicates (the outbox relay may publish twice; the
 * replay and the live copy overlap) are dropped by position.
 *
 * Positions grow within a conversation but are not consecutive (one sequence for all
 * conversations), so a missing one cannot be noticed here; the replay closes the only window
 * where one could go missing (see `LiveEvents.recentAfter`).
 */
export class EventStream implements LiveListener {
  private phase: 'replaying' | 'live' | 'ended' = 'replaying';
  private lastSent: number | null;
  private heldBack: ConversationEvent[] = [];

  constructor(private readonly options: EventStreamOptions) {
    this.lastSent = options.after;
  }

  /** Replays what the client missed, then goes live. A failed replay rejects before anything is sent. */
  async start(): Promise<void> {
    const replayed = this.lastSent === null ? [] : await this.options.replay(this.lastSent);
    if (this.phase === 'ended') return;
    this.options.sink.open();
    for (const event of byPosition([...replayed, ...this.heldBack])) this.sendIfNew(event);
    this.heldBack = [];
    this.phase = 'live';
  }

  event(event: ConversationEvent): void {
    if (this.phase === 'replaying') this.heldBack.push(event);
    else if (this.phase === 'live') this.sendIfNew(event);
  }

  /** Tokens are best effort: sent as they come while live, dropped during the replay. */
  token(token: TokenRecord): void {
    if (this.phase === 'live') this.options.sink.write(sseToken(token));
  }

  end(): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    this.heldBack = [];
    this.options.sink.end();
  }

  private sendIfNew(event: ConversationEvent): void {
    if (this.lastSent !== null && event.position <= this.lastSent) return;
    this.lastSent = event.position;
    this.options.sink.write(sseEvent(event));
  }
}

const byPosition = (events: ConversationEvent[]): ConversationEvent[] => events.sort((a, b) => a.position - b.position);
