import { describe, expect, it } from 'vitest';
import type { ConversationEvent } from '@rudder/contracts';
import { following } from './outbox-following';
import type { Written } from './writes';

const event = (conversation: string, position: number): ConversationEvent => ({
  v: 1,
  id: `${conversation}@${position}`,
  conversation,
  position,
  at: '2026-12-01T00:00:00.000Z',
  type: 'input.delivered',
  data: { input: { id: `i${position}`, kind: 'chat' }, turn: 't' },
});

/** A commit of `events`, each conversation's last position before them as given. */
const commit = (before: Record<string, number>, ...events: ConversationEvent[]): Written => ({ stored: events, before: new Map(Object.entries(before)), trace: `trace-${events[0].position}` });

const nothingFromTheTable = () => false;

describe('which handed-over commits the relay publishes as they are', () => {
  it('a commit right after what was published goes out as it is, with its trace; so do the commits that follow it', () => {
    const commits = [commit({ a: 2 }, event('a', 3), event('a', 4)), commit({ a: 4 }, event('a', 5))];
    const { events, traces, fromTable } = following(commits, new Map([['a', 2]]), nothingFromTheTable);
    expect(events.map((e) => e.position)).toEqual([3, 4, 5]);
    expect(traces).toEqual(['trace-3', 'trace-3', 'trace-5']);
    expect(fromTable).toEqual([]);
  });

  it("a conversation's first commit has before 0, and follows nothing published", () => {
    expect(following([commit({ b: 0 }, event('b', 1))], new Map(), nothingFromTheTable).events.map((e) => e.id)).toEqual(['b@1']);
  });

  it('a commit past what was published, or without its before, sends its conversation to the table, its later commits too; others go on', () => {
    const commits = [commit({ a: 5 }, event('a', 6)), commit({ b: 1 }, event('b', 2)), commit({ a: 6 }, event('a', 7)), commit({}, event('c', 1))];
    const { events, fromTable } = following(commits, new Map([['a', 2], ['b', 1]]), nothingFromTheTable);
    expect(events.map((e) => e.id)).toEqual(['b@2']);
    expect(fromTable.sort()).toEqual(['a', 'c']);
  });

  it('a conversation the step reads from the table already takes all its commits there', () => {
    const { events, fromTable } = following([commit({ a: 2 }, event('a', 3))], new Map([['a', 2]]), (c) => c === 'a');
    expect(events).toEqual([]);
    expect(fromTable).toEqual(['a']);
  });

  it('events a read of the table published already are not published again', () => {
    const { events } = following([commit({ a: 2 }, event('a', 3), event('a', 4), event('a', 5))], new Map([['a', 4]]), nothingFromTheTable);
    expect(events.map((e) => e.position)).toEqual([5]);
  });
});
