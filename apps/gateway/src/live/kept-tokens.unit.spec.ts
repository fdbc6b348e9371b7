import type { TokenRecord } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { KeptTokens, TOKENS_KEPT_AFTER_TURN_MS, TOKENS_KEPT_IDLE_MS } from './kept-tokens';

const record = (turn: string, text: string, conversation = 'c'): TokenRecord => ({ v: 1, conversation, turn, step: 0, text });

describe('KeptTokens', () => {
  it('keeps tokens by offset, drops a redelivery, and anchors each after the highest position seen', () => {
    const kept = new KeptTokens();
    expect(kept.keep(record('t1', 'a'), 5, 3, 0, 1)).toMatchObject({ offset: 5, anchor: 3 });
    expect(kept.keep(record('t1', 'a'), 5, 3, 0, 1)).toBeUndefined();
    // No position seen lately: it follows the token before it.
    expect(kept.keep(record('t1', 'b'), 6, null, 0, 1)).toMatchObject({ anchor: 3 });
    expect(kept.keep(record('t1', 'c'), 7, 4, 0, 1)).toMatchObject({ anchor: 4 });
    expect(kept.after('c', { position: 0, tokenOffset: 5 }).map((t) => t.record.text)).toEqual(['b', 'c']);
    // A bare position: the tokens that arrived after it was seen.
    expect(kept.after('c', { position: 4, tokenOffset: null }).map((t) => t.record.text)).toEqual(['c']);
    expect(kept.after('other', { position: 0, tokenOffset: null })).toEqual([]);
  });

  it("keeps a turn's tokens until a minute after it ended, or 15 minutes without a token", () => {
    const kept = new KeptTokens();
    kept.keep(record('ended', 'x'), 1, 0, 0, 1);
    kept.keep(record('running', 'y'), 2, 0, 0, 1);
    kept.turnEnded('c', 'ended', 1000);
    kept.sweep(1000 + TOKENS_KEPT_AFTER_TURN_MS - 1);
    expect(kept.after('c', { position: 0, tokenOffset: null }).map((t) => t.record.turn)).toEqual(['ended', 'running']);
    kept.sweep(1000 + TOKENS_KEPT_AFTER_TURN_MS);
    expect(kept.after('c', { position: 0, tokenOffset: null }).map((t) => t.record.turn)).toEqual(['running']);
    kept.sweep(TOKENS_KEPT_IDLE_MS);
    expect(kept.after('c', { position: 0, tokenOffset: null })).toEqual([]);
  });

  it('keeps at most its budget of bytes across conversations, the oldest going first, and frees what a sweep drops', () => {
    const kept = new KeptTokens(100);
    kept.keep(record('t1', 'a', 'c'), 1, 0, 0, 40);
    kept.keep(record('t2', 'b', 'd'), 2, 0, 0, 40);
    expect(kept.bytes).toBe(80);
    // A third 40 bytes go past 100: the oldest token of all goes, from conversation c.
    kept.keep(record('t1', 'c', 'c'), 3, 0, 0, 40);
    expect(kept.bytes).toBe(80);
    expect(kept.after('c', { position: 0, tokenOffset: null }).map((t) => t.record.text)).toEqual(['c']);
    expect(kept.after('d', { position: 0, tokenOffset: null }).map((t) => t.record.text)).toEqual(['b']);
    // Its turn is still known: its end still lets its tokens go a minute later, and frees their bytes.
    kept.turnEnded('c', 't1', 0);
    kept.sweep(TOKENS_KEPT_AFTER_TURN_MS);
    expect(kept.after('c', { position: 0, tokenOffset: null })).toEqual([]);
    expect(kept.bytes).toBe(40);
  });
});
