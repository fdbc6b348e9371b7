import type { TokenRecord } from '@rudder/contracts';
import { ByteBudget } from './byte-budget';

/** A token as the gateway hands it to streams: the record, where it is on `agent.tokens`, and what it followed. */
export type KeptToken = {
  record: TokenRecord;
  /** Its offset on `agent.tokens` (a conversation's tokens are all on one partition): the same on every gateway. */
  offset: number;
  /** The highest position of the conversation this gateway had seen when the token arrived: replays put it after that event. */
  anchor: number;
};

/** Tokens of a turn are kept this long after its `turn.ended` was seen (docs/api.md says so). */
export const TOKENS_KEPT_AFTER_TURN_MS = 60_000;
/** A turn whose end this gateway never sees (it started after the turn ended, say) is forgotten after this long without a token. */
export const TOKENS_KEPT_IDLE_MS = 15 * 60_000;
/** A conversation's kept tokens are bounded (the oldest go first): ~3 minutes of one answer at the worker's 40 ms coalescing. */
export const TOKENS_KEPT_PER_CONVERSATION = 5000;
/** All conversations' kept tokens together, in bytes as received (`KEPT_TOKENS_BYTES`): the oldest go first, whatever their conversation. */
export const DEFAULT_KEPT_TOKENS_BYTES = 32 * 1024 * 1024;

type Turn = { lastAt: number; endedAt: number | null };
type Conversation = { tokens: KeptToken[]; turns: Map<string, Turn> };

/**
 * The tokens of running turns (and of those that ended in the last minute), per conversation,
 * in offset order, so a reconnecting stream gets those it missed. In memory, per gateway: each
 * gateway's consumer reads every token record, so each keeps the same tokens under the same
 * offsets from when it started (as long as they are within the same byte budget).
 */
export class KeptTokens {
  private readonly conversations = new Map<string, Conversation>();
  private readonly budget: ByteBudget<KeptToken>;

  constructor(maxBytes = DEFAULT_KEPT_TOKENS_BYTES) {
    this.budget = new ByteBudget(maxBytes, (token) => this.evict(token));
  }

  /** The bytes of the tokens kept now, across conversations. */
  get bytes(): number {
    return this.budget.bytes;
  }

  /**
   * Keeps a token that arrived at `offset` when `seen` was the highest position of its
   * conversation this gateway had seen (null: none lately). Answers it as kept, or undefined
   * for a redelivery (its offset is kept already), which is not handed out again. `bytes`: its
   * size as received, counted against the budget of all kept tokens.
   */
  keep(record: TokenRecord, offset: number, seen: number | null, now: number, bytes: number): KeptToken | undefined {
    const key = record.conversation;
    let conversation = this.conversations.get(key);
    if (!conversation) this.conversations.set(key, (conversation = { tokens: [], turns: new Map() }));
    const last = conversation.tokens.at(-1);
    if (last && offset <= last.offset) return undefined;
    const token: KeptToken = { record, offset, anchor: Math.max(seen ?? 0, last?.anchor ?? 0) };
    conversation.tokens.push(token);
    if (conversation.tokens.length > TOKENS_KEPT_PER_CONVERSATION) this.budget.release(conversation.tokens.shift()!);
    const turn = conversation.turns.get(token.record.turn);
    if (turn) turn.lastAt = now;
    else conversation.turns.set(token.record.turn, { lastAt: now, endedAt: null });
    this.budget.add(token, bytes);
    return token;
  }

  /** The turn ended: its tokens go `TOKENS_KEPT_AFTER_TURN_MS` from now. */
  turnEnded(conversation: string, turn: string, now: number): void {
    const kept = this.conversations.get(conversation)?.turns.get(turn);
    if (kept && kept.endedAt === null) kept.endedAt = now;
  }

  /**
   * The kept tokens a client at `cursor` misses: those after its token offset, or, when it
   * names none (a stored event came last), those that arrived after its position was seen.
   */
  after(conversation: string, cursor: { position: number; tokenOffset: number | null }): KeptToken[] {
    const tokens = this.conversations.get(conversation)?.tokens ?? [];
    const { position, tokenOffset } = cursor;
    return tokenOffset === null ? tokens.filter((t) => t.anchor >= position) : tokens.filter((t) => t.offset > tokenOffset);
  }

  /** Drops the tokens of turns ended a minute ago, or idle for 15. */
  sweep(now: number): void {
    for (const [key, conversation] of this.conversations) {
      const gone = new Set<string>();
      for (const [turn, kept] of conversation.turns) {
        const ended = kept.endedAt !== null && now - kept.endedAt >= TOKENS_KEPT_AFTER_TURN_MS;
        if (ended || now - kept.lastAt >= TOKENS_KEPT_IDLE_MS) gone.add(turn);
      }
      if (gone.size === 0) continue;
      for (const turn of gone) conversation.turns.delete(turn);
      const kept: KeptToken[] = [];
      for (const token of conversation.tokens) {
        if (gone.has(token.record.turn)) this.budget.release(token);
        else kept.push(token);
      }
      conversation.tokens = kept;
      if (conversation.tokens.length === 0) this.conversations.delete(key);
    }
  }

  /**
   * The budget lets `token` go: the oldest kept token of all, so the first of its conversation's.
   * Its turn stays known (a later token of it is kept again, and its end still counts).
   */
  private evict(token: KeptToken): void {
    const conversation = this.conversations.get(token.record.conversation);
    if (!conversation) return;
    const at = conversation.tokens[0] === token ? 0 : conversation.tokens.indexOf(token);
    if (at >= 0) conversation.tokens.splice(at, 1);
  }
}
