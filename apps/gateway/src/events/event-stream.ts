import type { ConversationEvent, StreamCursor } from '@rudder/contracts';
import type { KeptToken } from './kept-tokens';
import { sseEvent, sseToken } from './sse';

/** What the live consumer hands each open stream of a conversation. */
export type LiveListener = {
  event(event: ConversationEvent): void;
  token(token: KeptToken): void;
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
  /** Where the client is (Last-Event-ID or `?after=`); null: live from now on, no replay. */
  after: StreamCursor | null;
  /** The events after a position that are already out (stored, or recently seen live), in any order. */
  replay: (after: number) => Promise<ConversationEvent[]>;
  /** The kept tokens a client at the cursor has not had (`KeptTokens.after`), in offset order. */
  replayTokens: (after: StreamCursor) => KeptToken[];
  /** For a live stream that has sent no event yet: the position its tokens' ids name (the conversation's latest seen). */
  latestPosition: () => number | null;
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
 *
 * Tokens go the same way on a second track: replayed from the kept ones after the cursor's
 * token offset (`KeptTokens`), held back during the replay, then sent live when their offset
 * is above the last one sent. The two tracks are independent (two topics have no order
 * between them), so each message's id carries both: an event's is its position, a token's
 * `<last position sent>.<its offset>`. In a replay a token goes after the event it followed
 * when it arrived (its anchor).
 */
export class EventStream implements LiveListener {
  private phase: 'replaying' | 'live' | 'ended' = 'replaying';
  private lastSent: number | null;
  private lastToken: number | null;
  private heldBack: ConversationEvent[] = [];
  private heldBackTokens: KeptToken[] = [];

  constructor(private readonly options: EventStreamOptions) {
    this.lastSent = options.after?.position ?? null;
    this.lastToken = options.after?.tokenOffset ?? null;
  }

  /** Replays what the client missed, then goes live. A failed replay rejects before anything is sent. */
  async start(): Promise<void> {
    const after = this.options.after;
    const replayed = after === null ? [] : await this.options.replay(after.position);
    if (this.phase === 'ended') return;
    this.options.sink.open();
    const tokens = after === null ? this.heldBackTokens : [...this.options.replayTokens(after), ...this.heldBackTokens];
    for (const item of inReplayOrder([...replayed, ...this.heldBack], tokens)) {
      if ('position' in item) this.sendIfNew(item);
      else this.sendTokenIfNew(item);
    }
    this.heldBack = [];
    this.heldBackTokens = [];
    this.phase = 'live';
  }

  event(event: ConversationEvent): void {
    if (this.phase === 'replaying') this.heldBack.push(event);
    else if (this.phase === 'live') this.sendIfNew(event);
  }

  token(token: KeptToken): void {
    if (this.phase === 'replaying') this.heldBackTokens.push(token);
    else if (this.phase === 'live') this.sendTokenIfNew(token);
  }

  end(): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    this.heldBack = [];
    this.heldBackTokens = [];
    this.options.sink.end();
  }

  private sendIfNew(event: ConversationEvent): void {
    if (this.lastSent !== null && event.position <= this.lastSent) return;
    this.lastSent = event.position;
    this.options.sink.write(sseEvent(event));
  }

  private sendTokenIfNew(token: KeptToken): void {
    if (this.lastToken !== null && token.offset <= this.lastToken) return;
    this.lastToken = token.offset;
    const position = this.lastSent ?? this.options.latestPosition() ?? 0;
    this.options.sink.write(sseToken(token.record, { position, tokenOffset: token.offset }));
  }
}

/** Events by position, each token after the event it followed (its anchor), tokens by offset. */
function inReplayOrder(events: ConversationEvent[], tokens: KeptToken[]): (ConversationEvent | KeptToken)[] {
  const key = (item: ConversationEvent | KeptToken): [number, number, number] =>
    'position' in item ? [item.position, 0, 0] : [item.anchor, 1, item.offset];
  return [...events, ...tokens].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
}
