import { describe, expect, it } from 'vitest';
import { RudderError } from './errors';
import { eventStream, type StreamEvent } from './events';

const sse = (position: number, type = 'turn.started') =>
  `id: ${position}\nevent: ${type}\ndata: ${JSON.stringify({ v: 1, id: `e${position}`, conversation: 'c', position, at: '', type, data: {} })}\n\n`;

/** A response whose body sends `chunks`, then errors (a dropped connection) unless `end` is set. */
const answer = (chunks: string[], end = false) =>
  new Response(
    new ReadableStream<Uint8Array>({
      // One chunk per read, then the end or the error (an error in start() would drop what is queued).
      pull(controller) {
        const chunk = chunks.shift();
        if (chunk !== undefined) controller.enqueue(new TextEncoder().encode(chunk));
        else if (end) controller.close();
        else controller.error(new Error('connection reset'));
      },
    }),
    { status: 200, headers: { 'content-type': 'text/event-stream' } },
  );

describe('eventStream', () => {
  it('reconnects with Last-Event-ID of the last event yielded and drops what the replay repeats', async () => {
    const asked: (string | undefined)[] = [];
    const answers = [
      // cut in the middle of the event at position 3: it was never whole, so never yielded
      () => answer([sse(1), sse(2), sse(3).slice(0, 20)]),
      () => answer([sse(2), sse(3), sse(4)]),
      () => new Response(JSON.stringify({ error: { code: 'unavailable', message: 'down' } }), { status: 503 }),
      () => answer([sse(4), sse(5, 'turn.ended'), `event: token\ndata: {"turn":"t","step":0,"text":"hi"}\n\n`], true),
    ];
    const done = new AbortController();
    const seen: StreamEvent[] = [];
    const stream = eventStream(async (headers) => {
      asked.push(headers['last-event-id']);
      return (answers.shift() ?? (() => answer([], true)))();
    }, { signal: done.signal });
    for await (const event of stream) {
      seen.push(event);
      if (event.type === 'token') done.abort();
    }
    expect(seen.map((e) => (e.type === 'token' ? 'token' : (e as { position: number }).position))).toEqual([1, 2, 3, 4, 5, 'token']);
    expect(asked).toEqual([undefined, '2', '4', '4']);
  });

  it('resumes tokens too: Last-Event-ID is <position>.<offset> once a token came, and a replayed token is dropped', async () => {
    const tok = (id: string, text: string) => `id: ${id}\nevent: token\ndata: {"turn":"t","step":0,"text":"${text}"}\n\n`;
    const asked: (string | undefined)[] = [];
    const answers = [
      // live: no position yet; the token names the one it follows (7)
      () => answer([tok('7.20', 'a'), tok('7.21', 'b')]),
      () => answer([tok('7.21', 'b'), sse(8), tok('8.22', 'c')]),
      () => answer([tok('8.22', 'c'), sse(9, 'turn.ended')], true),
    ];
    const done = new AbortController();
    const seen: string[] = [];
    const stream = eventStream(async (headers) => {
      asked.push(headers['last-event-id']);
      return (answers.shift() ?? (() => answer([], true)))();
    }, { signal: done.signal });
    for await (const event of stream) {
      seen.push(event.type === 'token' ? `${event.id} ${event.data.text}` : String(event.position));
      if (event.type === 'turn.ended') done.abort();
    }
    expect(seen).toEqual(['7.20 a', '7.21 b', '8', '8.22 c', '9']);
    expect(asked).toEqual([undefined, '7.21', '8.22']);
  });

  it('tells when each connection is open, and shows every message as sent, the repeats it drops included', async () => {
    const answers = [
      () => answer([sse(1), sse(2)]),
      () => new Response(JSON.stringify({ error: { code: 'unavailable', message: 'down' } }), { status: 503 }),
      () => answer([sse(2), sse(3, 'turn.ended')], true),
    ];
    const log: string[] = [];
    const stream = eventStream(async () => (answers.shift() ?? (() => answer([], true)))(), {
      onOpen: () => log.push('open'),
      onMessage: (message) => log.push(`message ${message.id} ${message.event} ${(JSON.parse(message.data) as { position: number }).position}`),
    });
    for await (const event of stream) {
      log.push(`yield ${(event as { position: number }).position}`);
      if (event.type === 'turn.ended') break;
    }
    expect(log).toEqual([
      'open',
      'message 1 turn.started 1',
      'yield 1',
      'message 2 turn.started 2',
      'yield 2',
      'open',
      'message 2 turn.started 2',
      'message 3 turn.ended 3',
      'yield 3',
    ]);
  });

  it('without a position, opens live, and a cut before the first event resumes after the position `startAt` read before', async () => {
    const asked: (string | undefined)[] = [];
    const answers = [
      // cut before any event came
      () => answer([': keep-alive\n\n']),
      () => answer([sse(12), sse(13, 'turn.ended')], true),
    ];
    const starts: number[] = [];
    const stream = eventStream(
      async (headers) => {
        asked.push(headers['last-event-id']);
        return (answers.shift() ?? (() => answer([], true)))();
      },
      {},
      async () => {
        starts.push(11);
        return 11;
      },
    );
    const seen: number[] = [];
    for await (const event of stream) {
      seen.push((event as { position: number }).position);
      if (event.type === 'turn.ended') break;
    }
    expect(seen).toEqual([12, 13]);
    expect(asked).toEqual([undefined, '11']);
    expect(starts).toEqual([11]); // read once, before the first connection
  });

  it('a start position that cannot be read leaves the stream as it was without one: live, and resumed live', async () => {
    // The read side down, or a token that opens the stream only (a stream token): the stream's own answer decides.
    for (const refusal of [new RudderError('unavailable', 503, 'the read side is down'), new RudderError('forbidden', 403, 'a stream token')]) {
      const asked: (string | undefined)[] = [];
      const answers = [() => answer([': keep-alive\n\n']), () => answer([sse(5, 'turn.ended')], true)];
      let reads = 0;
      const stream = eventStream(
        async (headers) => {
          asked.push(headers['last-event-id']);
          return answers.shift()!();
        },
        {},
        () => {
          reads += 1;
          return Promise.reject(refusal);
        },
      );
      expect(((await stream.next()).value as { position: number }).position).toBe(5);
      expect(asked).toEqual([undefined, undefined]);
      expect(reads).toBe(1);
    }
  });

  it('ends with the error of an answer that retrying will not change', async () => {
    const stream = eventStream(async () => new Response(JSON.stringify({ error: { code: 'forbidden', message: 'no' } }), { status: 403 }));
    await expect(stream.next()).rejects.toMatchObject({ code: 'forbidden', status: 403, message: 'no' });
  });

  it('reads events whose lines end in \\r\\n, split anywhere, with keep-alive comments between', async () => {
    const text = `: keep-alive\r\n\r\n${sse(1).replaceAll('\n', '\r\n')}${sse(2, 'turn.ended').replaceAll('\n', '\r\n')}`;
    const chunks = [text.slice(0, 7), text.slice(7, 40), text.slice(40, 41), text.slice(41)];
    const seen: StreamEvent[] = [];
    for await (const event of eventStream(async () => answer([...chunks], true))) {
      seen.push(event);
      if (event.type === 'turn.ended') break;
    }
    expect(seen.map((e) => (e as { position: number }).position)).toEqual([1, 2]);
  });
});
