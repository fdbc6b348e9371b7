import type { ConversationEvent } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { EventStream, type EventStreamOptions, type StreamSink } from './event-stream';
import type { KeptToken } from './kept-tokens';

const event = (position: number): ConversationEvent => ({
  v: 1,
  id: `e-${position}`,
  conversation: 'c',
  position,
  at: '2026-01-01T00:00:00.000Z',
  type: 'turn.started',
  data: { turn: 't', prompt: { id: `i-${position}`, text: 'x' } },
});

const token = (offset: number, anchor: number, text = `t${offset}`): KeptToken => ({
  record: { v: 1, conversation: 'c', turn: 't', step: 0, text },
  offset,
  anchor,
});
const at = (position: number, tokenOffset: number | null = null) => ({ position, tokenOffset });

/** A stream with no kept tokens and no position seen, unless told. */
const streamOf = (options: Partial<EventStreamOptions> & Pick<EventStreamOptions, 'after' | 'sink' | 'replay'>) =>
  new EventStream({ replayTokens: () => [], latestPosition: () => null, ...options });

function recordingSink() {
  const log: string[] = [];
  const sink: StreamSink = { open: () => log.push('open'), write: (chunk) => log.push(chunk), end: () => log.push('end') };
  const ids = () => log.filter((l) => l.startsWith('id: ') && !l.includes('event: token')).map((l) => Number(/^id: (\d+)/.exec(l)![1]));
  const all = () => log.filter((l) => l.startsWith('id: ')).map((l) => /^id: ([\d.]+)/.exec(l)![1]);
  return { sink, log, ids, all };
}

describe('EventStream', () => {
  it('sends the replay, then the events held back during it, in position order and each position once', async () => {
    const { sink, ids } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = streamOf({ after: at(5), sink, replay: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    stream.event(event(8)); // live during the replay, also in it
    stream.event(event(9)); // live during the replay, not in it yet
    stream.event(event(4)); // older than what the client has
    finishReplay([event(6), event(8), event(7)]);
    await started;
    stream.event(event(9)); // the relay published it twice
    stream.event(event(10));
    expect(ids()).toEqual([6, 7, 8, 9, 10]);
  });

  it('without a position it goes live at once and asks for no replay', async () => {
    const { sink, log, ids } = recordingSink();
    const stream = streamOf({ after: null, sink, replay: () => Promise.reject(new Error('not asked')) });
    await stream.start();
    stream.event(event(3));
    stream.event(event(2));
    stream.event(event(4));
    expect(log[0]).toBe('open');
    expect(ids()).toEqual([3, 4]);
  });

  it('a failed replay rejects before anything is sent', async () => {
    const { sink, log } = recordingSink();
    const stream = streamOf({ after: at(1), sink, replay: () => Promise.reject(new Error('companion away')) });
    await expect(stream.start()).rejects.toThrow('companion away');
    expect(log).toEqual([]);
  });

  it('a token carries <last position sent>.<offset> as id; held back during the replay, each offset once', async () => {
    const { sink, log } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = streamOf({ after: at(0), sink, replay: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    stream.token(token(7, 3, 'early'));
    finishReplay([event(3)]);
    await started;
    stream.token(token(7, 3, 'early')); // a redelivery
    stream.token(token(8, 3, 'late'));
    stream.event(event(4));
    stream.token(token(9, 4, '!'));
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
      replay: async () => [event(5), event(4), event(3)],
      replayTokens: (cursor) => kept.filter((t) => cursor.tokenOffset !== null && t.offset > cursor.tokenOffset),
    });
    await stream.start();
    stream.token(token(13, 5)); // live copy of a replayed one
    stream.token(token(14, 5));
    expect(all()).toEqual(['2.11', '3', '4', '4.12', '5', '5.13', '5.14']);
  });

  it('a live stream that has sent no event yet names the latest position seen in its tokens\' ids', async () => {
    const { sink, all } = recordingSink();
    const stream = streamOf({ after: null, sink, replay: () => Promise.reject(new Error('not asked')), latestPosition: () => 41 });
    await stream.start();
    stream.token(token(3, 41));
    expect(all()).toEqual(['41.3']);
  });

  it('after end nothing more is written, and a replay that finishes late opens nothing', async () => {
    const { sink, log } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = streamOf({ after: at(0), sink, replay: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    stream.end();
    stream.end();
    finishReplay([event(1)]);
    await started;
    stream.event(event(2));
    expect(log).toEqual(['end']);
  });
});
