import { inputIdsOf, type ConversationEvent } from '@rudder/contracts';
import { ByteBudget } from './byte-budget';

/** How long events seen live are kept for replays: far longer than the companion takes to store one. */
export const RECENT_MS = 60_000;
const RECENT_MAX_PER_CONVERSATION = 1000;

/** An event seen live, kept for `RECENT_MS`. */
type Seen = { event: ConversationEvent; seenAt: number };

/**
 * The events of each conversation this gateway's live consumer handed out in the last minute.
 *
 * An event handed out just before a stream subscribed may not be in the companion's store yet
 * when the stream replays (`after`); a decision a write waits for may have come before it
 * started to listen (`naming`); a token arriving now follows the conversation's latest event
 * (`latest`). What is kept of a conversation is always a tail of its log, none missing inside
 * it: events go oldest first, by age (`forgetSeenBefore`), past 1,000 of a conversation, or past
 * the byte bound of all of them together (`RECENT_EVENTS_BYTES`, whatever their conversation).
 */
export class RecentEvents {
  private readonly seen = new Map<string, Seen[]>();
  /** All of `seen` together, in bytes as received: past the bound the oldest go first. */
  private readonly bytes: ByteBudget<Seen>;
  /**
   * `seen` by the ids its events name (`namedKey(conversation, id)`): a decision looked for
   * among them is found without reading the conversation's last minute (up to 1,000 events,
   * read for every chat: 9 % of a gateway's CPU at saturation).
   */
  private readonly named = new Map<string, ConversationEvent[]>();
  /** The highest position of each conversation among `seen`. */
  private readonly highest = new Map<string, number>();

  constructor(maxBytes: number) {
    this.bytes = new ByteBudget(maxBytes, (seen) => this.evict(seen));
  }

  /** Keeps an event seen live now; `bytes`: its record's size. */
  remember(event: ConversationEvent, bytes: number, now = Date.now()): void {
    let seen = this.seen.get(event.conversation);
    if (!seen) this.seen.set(event.conversation, (seen = []));
    const entry: Seen = { event, seenAt: now };
    seen.push(entry);
    for (const id of idsNamedBy(event)) {
      const key = namedKey(event.conversation, id);
      const naming = this.named.get(key);
      if (naming) naming.push(event);
      else this.named.set(key, [event]);
    }
    if (seen.length > RECENT_MAX_PER_CONVERSATION) this.forget(seen.shift()!);
    this.highest.set(event.conversation, Math.max(event.position, this.highest.get(event.conversation) ?? 0));
    this.bytes.add(entry, bytes);
  }

  /** Events of the conversation above `position`, oldest first. */
  after(conversation: string, position: number): ConversationEvent[] {
    return (this.seen.get(conversation) ?? []).map((seen) => seen.event).filter((event) => event.position > position);
  }

  /** Events of the conversation that name one of `ids` (`idsNamedBy`), oldest first. */
  naming(conversation: string, ids: readonly string[]): ConversationEvent[] {
    const naming = ids.flatMap((id) => this.named.get(namedKey(conversation, id)) ?? []);
    return ids.length > 1 ? naming.sort((a, b) => a.position - b.position) : naming;
  }

  /** The highest position of the conversation among those kept; null when none is. */
  latest(conversation: string): number | null {
    return this.highest.get(conversation) ?? null;
  }

  /** Lets go of the events seen before `time`. */
  forgetSeenBefore(time: number): void {
    for (const [conversation, seen] of this.seen) {
      const kept = seen.filter((s) => s.seenAt >= time);
      for (const s of seen) if (s.seenAt < time) this.forget(s);
      if (kept.length === 0) {
        this.seen.delete(conversation);
        this.highest.delete(conversation);
      } else this.seen.set(conversation, kept);
    }
  }

  /** An event leaves by age or by the bound per conversation. */
  private forget(seen: Seen): void {
    this.bytes.release(seen);
    this.unname(seen.event);
  }

  /**
   * The byte bound lets `seen` go: the oldest of all, so the first of its conversation's. A
   * conversation left with none is forgotten, as after a minute.
   */
  private evict(seen: Seen): void {
    const conversation = seen.event.conversation;
    const list = this.seen.get(conversation);
    if (!list) return;
    const at = list[0] === seen ? 0 : list.indexOf(seen);
    if (at < 0) return;
    list.splice(at, 1);
    this.unname(seen.event);
    if (list.length === 0) {
      this.seen.delete(conversation);
      this.highest.delete(conversation);
    }
  }

  /** Drops an event that leaves from `named` (the oldest of each list it is in, so found at once). */
  private unname(event: ConversationEvent): void {
    for (const id of idsNamedBy(event)) {
      const key = namedKey(event.conversation, id);
      const naming = this.named.get(key);
      if (!naming) continue;
      const at = naming.indexOf(event);
      if (at >= 0) naming.splice(at, 1);
      if (naming.length === 0) this.named.delete(key);
    }
  }
}

const namedKey = (conversation: string, id: string) => `${conversation}\u0000${id}`;

/**
 * The ids of requests an event is about or answers, as the contract declares them
 * (`inputIdsOf`): the input it decides or delivers, and every input it is a receipt of (the
 * retract, stop, grant or promote it is the decision on). A decision the gateway waits for
 * names the id of what it sent.
 */
export const idsNamedBy = (event: ConversationEvent): string[] => inputIdsOf(event);
