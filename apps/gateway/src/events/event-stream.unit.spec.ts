import type { ConversationEvent } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { EventStream, type EventStreamOptions } from './event-stream';
import type { StreamSink } from './sse';
import type { KeptToken } from '../live/kept-tokens';
import { ReaderAccess } from './reader-access';

const event = (position: number): ConversationEvent => ({
  v: 1,
  id: `e-${position}`,
  conversation: 'c',
  position,
  at: '2026-01-01T00:00:00.000Z',
  type: 'turn.started',
  data: { turn: 't', prompt: { id: `i-${position}`, text: 'x' } },
});
const opened = (position: number, owner: string): ConversationEvent => ({
  ...event(position),
  type: 'conversation.opened',
  data: { owner, agent: 'default' },
});
const granted = (position: number, subject: string, access: 'read' | 'write' | null): ConversationEvent => ({
  ...event(position),
  type: 'access.granted',
  data: { grant: `g-${position}`, subject, access },
});

const turnStarted = (position: number, turn: string): ConversationEvent => ({ ...event(position), type: 'turn.started', data: { turn, prompt: { id: `i-${position}`, text: 'x' } } });
const token = (offset: number, anchor: number, text = `t${offset}`, turn = 't'): KeptToken => ({
  record: { v: 1, conversation: 'c', turn, step: 0, text },
  offset,
  anchor,
});
const at = (position: number, tokenOffset: number | null = null) => ({ position, tokenOffset });

/** The store as pages: what it holds after a position, all in one page (or none). */
type Store = (after: number, floor: number) => Promise<ConversationEvent[]>;
const pagesOf = (store: Store) =>
  async function* (after: number, floor: number): AsyncGenerator<ConversationEvent[]> {
    const page = await store(after, floor);
    if (page.length > 0) yield page;
  };
const nothingStored: Store = () => Promise.resolve([]);
const storeOf = (events: ConversationEvent[]): Store => (after) => Promise.resolve(events.filter((e) => e.position > after));

/** A stream in open development mode (no reader), with no kept tokens and no position seen, unless told. */
const streamOf = (options: Partial<Omit<EventStreamOptions, 'stored'>> & Pick<EventStreamOptions, 'after' | 'sink'> & { store?: Store }) =>
  new EventStream({
    reader: () => Promise.resolve(null),
    recent: () => [],
    replayTokens: () => [],
    latestPosition: () => null,
    stored: pagesOf(options.store ?? nothingStored),
    ...options,
  });

const readerOf = (subject: string, owner: string | null, asOf: number, grants: Record<string, 'read' | 'write'> = {}) => () =>
  Promise.resolve(new ReaderAccess(subject, { owner, grants }, asOf));

function recordingSink() {
  const log: string[] = [];
  const sink: StreamSink = { open: () => log.push('open'), write: (chunk) => log.push(chunk), end: () => log.push('end') };
  const ids = () => log.filter((l) => l.startsWith('id: ') && !l.includes('event: token')).map((l) => Number(/^id: (\d+)/.exec(l)![1]));
  const all = () => log.filter((l) => l.startsWith('id: ')).map((l) => /^id: ([\d.]+)/.exec(l)![1]);
  return { sink, log, ids, all };
}

/** alice grants bob read, and a turn starts: from then on bob's stream carries what follows, and nothing held from before. */
const aliceGrantsBob = async (stream: EventStream) => {
  stream.event(granted(11, 'bob', 'read'));
  stream.event(turnStarted(12, 't-after'));
  stream.token(token(2, 12, 'after the grant', 't-after'));
};

/** Lets the stream's pending promises (a gap being filled) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('EventStream', () => {
  it('sends the replay, then the events held back during it, in position order and each position once', async () => {
    const { sink, ids } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = streamOf({ after: at(5), sink, store: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    await settle();
    stream.event(event(8)); // live during the replay, also in it
    stream.event(event(9)); // live during the replay, not in it yet
    stream.event(event(4)); // older than what the client has
    finishReplay([event(6), event(8), event(7)]);
    await started;
    stream.event(event(9)); // the relay published it twice
    stream.event(event(10));
    expect(ids()).toEqual([6, 7, 8, 9, 10]);
  });

  it('without a position it goes live at once and asks the store for nothing', async () => {
    const { sink, log, ids } = recordingSink();
    const stream = streamOf({ after: null, sink, store: () => Promise.reject(new Error('not asked')) });
    await stream.start();
    stream.event(event(3));
    stream.event(event(2));
    stream.event(event(4));
    expect(log[0]).toBe('open');
    expect(ids()).toEqual([3, 4]);
  });

  it('a failed replay rejects before anything is sent', async () => {
    const { sink, log } = recordingSink();
    const stream = streamOf({ after: at(1), sink, store: () => Promise.reject(new Error('companion away')) });
    await expect(stream.start()).rejects.toThrow('companion away');
    expect(log).toEqual([]);
  });

  it('a token carries <last position sent>.<offset> as id; held back during the replay, each offset once', async () => {
    const { sink, log } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    // The first live event is past what the replay had: the stream asks the store up to it first.
    const later = storeOf([event(3), event(4)]);
    const store: Store = (after, floor) => (floor === 0 ? new Promise((resolve) => (finishReplay = resolve)) : later(after, floor));
    const stream = streamOf({ after: at(0), sink, store });
    const started = stream.start();
    await settle();
    stream.token(token(7, 3, 'early'));
    finishReplay([event(3)]);
    await started;
    stream.token(token(7, 3, 'early')); // a redelivery
    stream.token(token(8, 3, 'late'));
    stream.event(event(4));
    stream.token(token(9, 4, '!'));
    await settle();
    expect(log).toEqual([
      'open',
      expect.stringMatching(/^id: 3\n/),
      'id: 3.7\nevent: token\ndata: {"turn":"t","step":0,"text":"early"}\n\n',
      'id: 3.8\nevent: token\ndata: {"turn":"t","step":0,"text":"late"}\n\n',
      expect.stringMatching(/^id: 4\n/),
      'id: 4.9\nevent: token\ndata: {"turn":"t","step":0,"text":"!"}\n\n',
    ]);
  });

  it('resumes after <position>.<offset>: the events after the position and the kept tokens after the offset, each after the event it followed', async () => {
    const { sink, all } = recordingSink();
    const kept = [token(10, 2), token(11, 2), token(12, 4), token(13, 5)];
    const stream = streamOf({
      after: at(2, 10),
      sink,
      store: async () => [event(5), event(4), event(3)],
      replayTokens: (cursor) => kept.filter((t) => cursor.tokenOffset !== null && t.offset > cursor.tokenOffset),
    });
    await stream.start();
    stream.token(token(13, 5)); // live copy of a replayed one
    stream.token(token(14, 5));
    expect(all()).toEqual(['2.11', '3', '4', '4.12', '5', '5.13', '5.14']);
  });

  it("a live stream that has sent no event yet names the latest position seen in its tokens' ids", async () => {
    const { sink, all } = recordingSink();
    const stream = streamOf({ after: null, sink, latestPosition: () => 41 });
    await stream.start();
    stream.token(token(3, 41));
    expect(all()).toEqual(['41.3']);
  });

  it('after end nothing more is written, and a replay that finishes late opens nothing', async () => {
    const { sink, log } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = streamOf({ after: at(0), sink, store: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    await settle();
    stream.end();
    stream.end();
    finishReplay([event(1)]);
    await started;
    stream.event(event(2));
    expect(log).toEqual(['end']);
  });

  it('a resume never skips: events the store had not folded when asked, and this gateway no longer keeps, are fetched before the next live one', async () => {
    const { sink, ids } = recordingSink();
    // The store is behind: at first it has up to 3; 4 and 5 were seen live before the stream
    // subscribed and are gone from the gateway's recent events. Asked with a floor, it has them.
    const floors: number[] = [];
    const store: Store = async (after, floor) => {
      floors.push(floor);
      const held = floor >= 6 ? [event(3), event(4), event(5), event(6)] : [event(3)];
      return held.filter((e) => e.position > after);
    };
    const stream = streamOf({ after: at(2), sink, store });
    await stream.start();
    stream.event(event(6));
    stream.event(event(7));
    await settle();
    expect(ids()).toEqual([3, 4, 5, 6, 7]);
    expect(floors).toEqual([0, 6]);
  });

  it('a gap the store cannot fill ends the stream (the client resumes) instead of skipping', async () => {
    const { sink, log, ids } = recordingSink();
    const endings: string[] = [];
    let asked = 0;
    const store: Store = async (after) => {
      if (asked++ > 0) throw new Error('the read view is behind');
      return [event(3)].filter((e) => e.position > after);
    };
    const stream = streamOf({ after: at(2), sink, store, ended: (reason) => endings.push(reason) });
    await stream.start();
    stream.event(event(6));
    await settle();
    expect(ids()).toEqual([3]);
    expect(log.at(-1)).toBe('end');
    expect(endings).toHaveLength(1);
  });

  it('a long history is sent a page at a time, each once the client has taken the one before', async () => {
    const { sink, log } = recordingSink();
    const pages = [[event(3), event(4)], [event(5)], [event(6)]];
    const stream = new EventStream({
      reader: () => Promise.resolve(null),
      recent: () => [],
      replayTokens: () => [],
      latestPosition: () => null,
      after: at(2),
      sink: { ...sink, drained: async () => void log.push('drained') },
      stored: async function* () {
        yield* pages;
      },
    });
    await stream.start();
    expect(log.map((l) => (l.startsWith('id: ') ? Number(/^id: (\d+)/.exec(l)![1]) : l))).toEqual(['open', 3, 4, 'drained', 5, 'drained', 6, 'drained']);
  });

  it('the recent tail that overlaps the store needs no fetch', async () => {
    const { sink, ids } = recordingSink();
    let asked = 0;
    const stream = streamOf({
      after: at(2),
      sink,
      store: async (after) => (asked++, [event(3), event(4)].filter((e) => e.position > after)),
      recent: () => [event(4), event(5)],
    });
    await stream.start();
    stream.event(event(6));
    await settle();
    expect(ids()).toEqual([3, 4, 5, 6]);
    expect(asked).toBe(1);
  });
});

describe('EventStream: the reader may read the conversation at each event position', () => {
  it("a stream opened on a key nobody owns carries nothing of another's conversation", async () => {
    const { sink, log } = recordingSink();
    const stream = streamOf({ after: null, sink, reader: readerOf('bob', null, 0) });
    await stream.start();
    stream.event(opened(10, 'alice'));
    stream.token(token(1, 10, 'secret'));
    stream.event(event(11));
    await settle();
    expect(log).toEqual(['open']);
  });

  it("the owner's own stream, opened before the first write, carries the conversation from its opening", async () => {
    const { sink, ids } = recordingSink();
    let asked = 0;
    const stream = streamOf({ after: null, sink, reader: readerOf('alice', null, 0), store: async () => (asked++, []) });
    await stream.start();
    stream.event(opened(10, 'alice'));
    stream.event(event(11));
    await settle();
    expect(ids()).toEqual([10, 11]);
    expect(asked).toBe(0); // the conversation's first event: nothing can come before it
  });

  it("the owner's stream opened before the first write carries the first answer's tokens that came before the conversation's opening, right after it", async () => {
    const { sink, all } = recordingSink();
    const stream = streamOf({ after: null, sink, reader: readerOf('alice', null, 0) });
    await stream.start();
    stream.token(token(1, 0, 'Hel')); // agent.tokens ran ahead of agent.events
    stream.token(token(2, 0, 'lo'));
    stream.event(opened(10, 'alice'));
    stream.token(token(3, 10, '!'));
    await settle();
    expect(all()).toEqual(['10', '10.1', '10.2', '10.3']);
  });

  it("tokens that came before another subject's opening are dropped, never carried", async () => {
    const { sink, log } = recordingSink();
    const stream = streamOf({ after: null, sink, reader: readerOf('bob', null, 0) });
    await stream.start();
    stream.token(token(1, 0, 'secret'));
    stream.event(opened(10, 'alice'));
    await aliceGrantsBob(stream);
    await settle();
    expect(log.join('')).not.toContain('secret');
    expect(log.join('')).toContain('after the grant');
  });

  it("a reader granted while the stream runs is carried the tokens of the turns started after the grant, never of one before it, however late they come", async () => {
    const { sink, log, all } = recordingSink();
    const stream = streamOf({ after: null, sink, reader: readerOf('bob', 'alice', 9) });
    await stream.start();
    stream.event(turnStarted(10, 't-before'));
    stream.token(token(1, 10, 'before, on time', 't-before'));
    stream.event(event(11));
    stream.event(granted(12, 'bob', 'read'));
    // agent.tokens runs behind agent.events: the turn before the grant streams on after it.
    stream.token(token(2, 12, 'before, late', 't-before'));
    stream.event(turnStarted(13, 't-after'));
    stream.token(token(3, 13, 'after', 't-after'));
    stream.token(token(4, 13, 'before, later still', 't-before'));
    await settle();
    expect(log.join('')).not.toContain('before,');
    expect(all()).toEqual(['12', '13', '13.3']);
  });

  it('a reader who could read where the stream began is carried every turn\'s tokens, a turn that began before the stream too', async () => {
    const { sink, all } = recordingSink();
    const stream = streamOf({ after: null, sink, reader: readerOf('bob', 'alice', 9, { bob: 'read' }), latestPosition: () => 9 });
    await stream.start();
    stream.token(token(1, 9, 'mid-turn', 't-running'));
    stream.event(turnStarted(10, 't-next'));
    stream.token(token(2, 10, 'next', 't-next'));
    await settle();
    expect(all()).toEqual(['9.1', '10', '10.2']);
  });

  it('an event after the status the stream opened with is judged after the access facts before it, fetched when it was not seen live', async () => {
    const { sink, log } = recordingSink();
    // bob had read access at 20 (the status); it was revoked at 21, which this gateway
    // consumed before bob subscribed, and the store had not folded when the status was read.
    const store: Store = async (after, floor) => [granted(21, 'bob', null), event(22)].filter((e) => e.position > after && e.position <= Math.max(floor, 20));
    const stream = streamOf({ after: null, sink, reader: readerOf('bob', 'alice', 20, { bob: 'read' }), store });
    await stream.start();
    stream.event(event(22));
    await settle();
    expect(log).toEqual(['open', 'end']);
  });

  it('a revoke ends the stream of the revoked reader; a grant opens it to the grantee', async () => {
    const bob = recordingSink();
    const carol = recordingSink();
    const endings: string[] = [];
    const bobs = streamOf({ after: null, sink: bob.sink, reader: readerOf('bob', 'alice', 10, { bob: 'read' }), ended: (r) => endings.push(r) });
    const carols = streamOf({ after: null, sink: carol.sink, reader: readerOf('carol', 'alice', 10) });
    await Promise.all([bobs.start(), carols.start()]);
    for (const e of [event(11), granted(12, 'carol', 'read'), event(13), granted(14, 'bob', null), event(15)]) {
      bobs.event(e);
      carols.event(e);
    }
    await settle();
    expect(bob.ids()).toEqual([11, 12, 13]);
    expect(bob.log.at(-1)).toBe('end');
    expect(endings).toEqual(['bob may no longer read the conversation']);
    expect(carol.ids()).toEqual([12, 13, 14, 15]);
  });

  it('history is replayed from where the access is known, carrying only what comes after the cursor', async () => {
    const { sink, ids } = recordingSink();
    const history = [opened(1, 'alice'), event(2), granted(3, 'bob', 'read'), event(4), granted(5, 'bob', null), event(6)];
    // The status said bob may read as of 3; his cursor is at 4.
    const stream = streamOf({ after: at(4), sink, reader: readerOf('bob', 'alice', 3, { bob: 'read' }), store: storeOf(history) });
    await stream.start();
    expect(ids()).toEqual([]);
  });
});

describe('EventStream: announced events (a commit announced what it stored, ahead of its records)', () => {
  it('carries them at once when they follow the last event it has been through, and drops their records after', async () => {
    const { sink, ids } = recordingSink();
    const stream = streamOf({ after: at(5), sink, store: storeOf([event(3), event(5), event(7)]) });
    await stream.start();
    expect(ids()).toEqual([7]);
    stream.announced([event(9), event(10)], 7);
    expect(ids()).toEqual([7, 9, 10]);
    // Their records come later, as does the next commit's.
    for (const p of [9, 10, 12]) stream.event(event(p));
    await settle();
    expect(ids()).toEqual([7, 9, 10, 12]);
  });

  it('leaves to their records those that do not follow it: nothing is carried out of order or past a gap', async () => {
    const { sink, ids } = recordingSink();
    const stream = streamOf({ after: null, sink });
    await stream.start();
    // Nothing through yet (live from now): an announcement cannot be known to follow, unless it holds the conversation's first events.
    stream.announced([event(4)], 3);
    expect(ids()).toEqual([]);
    stream.event(event(4));
    await settle();
    expect(ids()).toEqual([4]);
    const fresh = recordingSink();
    const first = streamOf({ after: at(0), sink: fresh.sink });
    await first.start();
    first.announced([opened(2, 'alice'), event(3)], 0);
    expect(fresh.ids()).toEqual([2, 3]);
    // A commit whose announcement did not come (too large for one) is between: 5 is missing before 6.
    stream.announced([event(6)], 5);
    expect(ids()).toEqual([4]);
    stream.event(event(5));
    stream.event(event(6));
    await settle();
    expect(ids()).toEqual([4, 5, 6]);
    stream.announced([event(7)], 6);
    expect(ids()).toEqual([4, 5, 6, 7]);
  });

  it('takes none while it replays or while records wait their turn before them', async () => {
    const { sink, ids } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = streamOf({ after: at(5), sink, store: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    await settle();
    stream.announced([event(6)], 5);
    finishReplay([event(6)]);
    await started;
    expect(ids()).toEqual([6]);
    // A record waits while the store fills the gap before it: an announcement after it is not taken ahead of it.
    const gapped = recordingSink();
    let fill!: (events: ConversationEvent[]) => void;
    let asked = 0;
    const reading = streamOf({
      after: null,
      reader: readerOf('alice', 'alice', 2),
      sink: gapped.sink,
      store: () => (asked++ === 0 ? new Promise((resolve) => (fill = resolve)) : Promise.resolve([])),
    });
    await reading.start();
    reading.event(event(5));
    await settle();
    reading.announced([event(6)], 5);
    expect(gapped.ids()).toEqual([]);
    fill([event(3), event(4), event(5)]);
    await settle();
    reading.event(event(6));
    await settle();
    // Live from now: the gap's events are folded, not carried; 6 only after 5.
    expect(gapped.ids()).toEqual([5, 6]);
  });

  it('folds the reader access from them: a revoke announced ends the stream, and nothing after it is carried', async () => {
    const { sink, ids, log } = recordingSink();
    const stream = streamOf({ after: null, reader: readerOf('bob', 'alice', 10, { bob: 'read' }), sink, store: storeOf([]) });
    await stream.start();
    stream.event(event(11));
    await settle();
    stream.announced([event(12), granted(13, 'bob', null), event(14)], 11);
    expect(ids()).toEqual([11, 12]);
    expect(log.at(-1)).toBe('end');
  });

  it("carries nothing of another's conversation announced to a stream opened before its owner's first write", async () => {
    const { sink, ids } = recordingSink();
    const stream = streamOf({ after: at(0), reader: readerOf('bob', null, 0), sink, store: storeOf([]) });
    await stream.start();
    stream.announced([opened(2, 'alice'), event(3)], 0);
    stream.announced([event(4)], 3);
    expect(ids()).toEqual([]);
  });
});
