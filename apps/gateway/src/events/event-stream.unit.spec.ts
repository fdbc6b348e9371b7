import type { ConversationEvent } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { EventStream, type StreamSink } from './event-stream';

const event = (position: number): ConversationEvent => ({
  v: 1,
  id: `e-${position}`,
  conversation: 'c',
  position,
  at: '2026-01-01T00:00:00.000Z',
  type: 'turn.started',
  data: { turn: 't', prompt: { id: `i-${position}`, text: 'x' } },
});

function recordingSink() {
  const log: string[] = [];
  const sink: StreamSink = { open: () => log.push('open'), write: (chunk) => log.push(chunk), end: () => log.push('end') };
  const ids = () => log.filter((l) => l.startsWith('id: ')).map((l) => Number(/^id: (\d+)/.exec(l)![1]));
  return { sink, log, ids };
}

describe('EventStream', () => {
  it('sends the replay, then the events held back during it, in position order and each position once', async () => {
    const { sink, ids } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = new EventStream({ after: 5, sink, replay: () => new Promise((resolve) => (finishReplay = resolve)) });
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
    const stream = new EventStream({ after: null, sink, replay: () => Promise.reject(new Error('not asked')) });
    await stream.start();
    stream.event(event(3));
    stream.event(event(2));
    stream.event(event(4));
    expect(log[0]).toBe('open');
    expect(ids()).toEqual([3, 4]);
  });

  it('a failed replay rejects before anything is sent', async () => {
    const { sink, log } = recordingSink();
    const stream = new EventStream({ after: 1, sink, replay: () => Promise.reject(new Error('companion away')) });
    await expect(stream.start()).rejects.toThrow('companion away');
    expect(log).toEqual([]);
  });

  it('tokens are dropped during the replay and sent while live', async () => {
    const { sink, log } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = new EventStream({ after: 0, sink, replay: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    stream.token({ v: 1, conversation: 'c', turn: 't', step: 0, text: 'early' });
    finishReplay([]);
    await started;
    stream.token({ v: 1, conversation: 'c', turn: 't', step: 0, text: 'late' });
    expect(log).toEqual(['open', 'event: token\ndata: {"turn":"t","step":0,"text":"late"}\n\n']);
  });

  it('after end nothing more is written, and a replay that finishes late opens nothing', async () => {
    const { sink, log } = recordingSink();
    let finishReplay!: (events: ConversationEvent[]) => void;
    const stream = new EventStream({ after: 0, sink, replay: () => new Promise((resolve) => (finishReplay = resolve)) });
    const started = stream.start();
    stream.end();
    stream.end();
    finishReplay([event(1)]);
    await started;
    stream.event(event(2));
    expect(log).toEqual(['end']);
  });
});
