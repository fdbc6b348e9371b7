import { RudderClient, type StreamEvent } from '@rudder/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStreams, sample, scrape } from './prometheus';
import { gatewayProcess, longAnswer, memoryOf, nonReadingStreams, resetPeak, streamingScript, type GatewayProcess } from './slow-readers';
import { readEvents } from './sse';
import { answered, startStack, WAIT, type Stack } from './stack';

/**
 * Memory caps: a gateway's memory is bounded, however its clients read. The gateway measured is
 * a process of its own beside the stack's (same Kafka, topics and companion), so its resident
 * memory is its own; its streams' buffer cap is set low (256 KiB) so that 200 streams stay
 * well apart from what it would hold without one. The answers come from the stack's gateway.
 */
const STREAM_BUFFER_BYTES = 256 * 1024;
const STREAMS = 200;
/** The stated cap: the gateway's peak resident memory may grow by this much over what it held with the streams open. */
const RSS_GROWTH_CAP = 320 * 2 ** 20;
/**
 * Ten answers of 300 kB: each stream is offered ~9 MB (each answer as tokens, in model.replied
 * and in turn.ended), past what the kernel takes of a connection that is not read (on loopback
 * up to ~4 MB: net.ipv4.tcp_wmem's maximum) and the cap. (A larger answer would not do: its
 * model.replied and turn.ended are published together, over Kafka's 1 MB per record batch.)
 */
const ANSWERS = 10;
const ANSWER_KB = 300;

let stack: Stack;
let gateway: GatewayProcess;
beforeAll(async () => {
  stack = await startStack({ script: streamingScript });
  gateway = await gatewayProcess({ ...stack.env, COMPANION_URL: stack.companionUrl, STREAM_BUFFER_BYTES: String(STREAM_BUFFER_BYTES) });
});
afterAll(async () => {
  await gateway?.stop();
  await stack?.stop();
});

const dropped = async () => sample(await scrape(`${gateway.url}/metrics`), 'rudder_sse_slow_clients_dropped_total');

describe('memory caps', () => {
  it('200 event streams that never read, on a conversation streaming long answers, leave the gateway\'s resident memory within its cap: each is dropped at STREAM_BUFFER_BYTES unsent, once', async () => {
    const conversation = `memory/never-read-${Date.now()}`;
    const streams = await nonReadingStreams(gateway.url, conversation, STREAMS);
    try {
      await vi.waitFor(async () => expect(await openStreams(gateway.url)).toBe(STREAMS), WAIT);
      // A stream that reads (@rudder/client, which resumes should it fall behind), opened after
      // the others: once it has an event, so have they (the gateway hands a record to a
      // conversation's streams in the order they subscribed).
      const done = new AbortController();
      let offered = 0;
      let opens = 0;
      const reading = (async () => {
        let ended = 0;
        for await (const event of new RudderClient({ baseUrl: gateway.url }).events(conversation, { signal: done.signal, onOpen: () => (opens += 1) })) {
          offered += JSON.stringify(event).length;
          if (event.type === 'turn.ended' && (ended += 1) === ANSWERS) return;
        }
      })();
      await vi.waitFor(async () => expect(await openStreams(gateway.url)).toBe(STREAMS + 1), WAIT);
      resetPeak(gateway.pid);
      const before = memoryOf(gateway.pid).rss;

      for (let i = 0; i < ANSWERS; i += 1) {
        await stack.client.chat(conversation, { text: `stream ${ANSWER_KB} kB`, id: `long-${i}` });
        await answered(stack.client, conversation, `long-${i}`);
      }
      await reading;
      done.abort();
      const grown = memoryOf(gateway.pid).peak - before;
      // What each stream was offered: far more than the cap (and than the kernel's buffers).
      expect(offered).toBeGreaterThan(ANSWERS * ANSWER_KB * 1000 * 2.5);
      expect(grown, `the gateway's peak resident memory grew by ${(grown / 2 ** 20).toFixed(0)} MiB over ${(before / 2 ** 20).toFixed(0)} MiB`).toBeLessThan(RSS_GROWTH_CAP);

      // Each never-reading stream dropped once (and the reader, as often as it reconnected).
      await vi.waitFor(async () => expect(await openStreams(gateway.url)).toBe(0), WAIT);
      expect(await dropped()).toBe(STREAMS + opens - 1);
      const logged = gateway.output().split('\n').filter((line) => line.includes('dropped an event stream whose client reads too slowly'));
      expect(logged).toHaveLength(STREAMS + opens - 1);
      expect(JSON.parse(logged[0])).toMatchObject({ conversation, cap: STREAM_BUFFER_BYTES });
    } finally {
      streams.close();
    }
  });

  it('a @rudder/client stream whose reader stalls is dropped, reconnects by itself with Last-Event-ID, and yields every event once, in order, and every token', async () => {
    const conversation = `memory/stalled-${Date.now()}`;
    const client = new RudderClient({ baseUrl: gateway.url });
    let opens = 0;
    const events = client.events(conversation, { after: 0, onOpen: () => (opens += 1) });
    const iterator = events[Symbol.asyncIterator]();
    const first = iterator.next();
    await vi.waitFor(() => expect(opens).toBe(1), WAIT);
    const droppedBefore = await dropped();

    // The reader takes one event, then stalls while the conversation answers until the gateway drops it.
    let answers = 0;
    await stack.client.chat(conversation, { text: `stream ${ANSWER_KB} kB`, id: `stalled-${answers}` });
    expect(((await first).value as StreamEvent).type).toBe('conversation.opened');
    while ((await dropped()) === droppedBefore) {
      await answered(stack.client, conversation, `stalled-${answers}`);
      expect(answers, 'the stalled stream was never dropped').toBeLessThan(8);
      answers += 1;
      await stack.client.chat(conversation, { text: `stream ${ANSWER_KB} kB`, id: `stalled-${answers}` });
    }
    const last = await answered(stack.client, conversation, `stalled-${answers}`);

    // Until the last turn ended and its tokens are in: tokens and events are two topics with no
    // order between them, so the last answer's tokens may come after its turn.ended.
    const expectedTokens = Array.from({ length: answers + 1 }, () => longAnswer(ANSWER_KB)).join('');
    const yielded: StreamEvent[] = [((await first).value as StreamEvent)];
    let ended = false;
    let tokenText = '';
    while (!ended || tokenText.length < expectedTokens.length) {
      const event = (await iterator.next()).value as StreamEvent;
      yielded.push(event);
      if (event.type === 'token') tokenText += (event as { data: { text: string } }).data.text;
      if (event.type === 'turn.ended' && (event as { data: { turn: string } }).data.turn === last.id) ended = true;
    }
    await iterator.return?.();

    expect(opens).toBeGreaterThan(1);
    const stored = yielded.filter((e) => e.type !== 'token') as { position: number; id: string }[];
    const all = await readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended' && (m.data as { data: { turn: string } }).data.turn === last.id);
    expect(stored.map((e) => String(e.position))).toEqual(all.filter((m) => m.event !== 'token').map((m) => m.id));
    const tokens = yielded.filter((e) => e.type === 'token').map((e) => (e as { data: { text: string } }).data.text).join('');
    expect(tokens).toBe(expectedTokens);
  });
});
