import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastUserText, reply, toolResults, userTexts, type ModelRequest, type Script } from '@rudder/scripted-model';
import { readEvents, type SseMessage } from '../../../test/sse';
import { answered, started, WAIT, startStack, type Stack } from '../../../test/stack';

/**
 * The ADK example end to end: its worker process (src/main.ts) runs an ADK `LlmAgent` through
 * @rudder/adk. Its tools ask the hotels backend at HOTELS_URL — a server here that holds each
 * search open until the test lets it go (so "a steer sent during the tool call" is true by
 * construction), and records each search and booking with the process that made it (so "runs
 * once" is counted across workers).
 */
const script: Script = (request) => {
  if (toolResults(request).length > 0) {
    return reply.text(`found: ${toolResults(request).map((r) => r.content as string).join('; ')} (asked: ${userTexts(request).join(' / ')})`);
  }
  const book = /book (\S+)/.exec(lastUserText(request));
  if (book) return reply.tools([{ name: 'book_hotel', arguments: { hotelId: book[1] } }], { content: 'Booking it.' });
  const city = /hotel in (\w+)/.exec(lastUserText(request));
  if (city) return reply.tools([{ name: 'search_hotels', arguments: { city: city[1] } }], { content: 'Let me look.' });
  return reply.text(`noted: ${lastUserText(request)}`);
};

type Held = { city: string; release: () => void; closed: Promise<void> };
let stack: Stack;
let hotels: Server;
const held: Held[] = [];
const searches: string[] = [];
const bookings: { hotelId: string; key: string; pid: number }[] = [];

function backend(request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url ?? '/', 'http://localhost');
  if (request.method === 'POST') {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const booking = JSON.parse(body) as { hotelId: string; key: string; pid: number };
      bookings.push(booking);
      response.end(JSON.stringify({ reference: `B-${bookings.length}`, hotelId: booking.hotelId }));
    });
    return;
  }
  const city = url.searchParams.get('city') ?? '';
  searches.push(city);
  const closed = new Promise<void>((resolve) => response.on('close', () => resolve()));
  held.push({ city, release: () => response.end(JSON.stringify([{ id: 'lis-2', name: 'Alfama Rooms', city, pricePerNight: 85 }])), closed });
}

beforeAll(async () => {
  hotels = createServer(backend);
  await new Promise<void>((resolve) => hotels.listen(0, '127.0.0.1', resolve));
  stack = await startStack({ script, workerEntry: 'examples/adk-trips/src/main.ts', workerEnv: { HOTELS_URL: `http://127.0.0.1:${(hotels.address() as AddressInfo).port}/rates` } });
});
afterAll(async () => {
  for (const h of held) h.release();
  await stack?.stop();
  hotels?.close();
});

const key = (name: string) => `adk/${name}-${Math.random().toString(36).slice(2, 8)}`;
const heldFor = (city: string) => vi.waitFor(() => held.find((h) => h.city === city) ?? Promise.reject(new Error(`no search for ${city} yet`)), { ...WAIT, timeout: 20_000 });
const withText = (requests: ModelRequest[], text: string) => requests.filter((r) => userTexts(r).includes(text));

describe('the ADK trips example', () => {
  it('a steer sent while search_hotels is held open lands, and is in the very next model request once, right after the result', async () => {
    const { client, model } = stack;
    const conversation = key('steer');
    await client.chat(conversation, { text: 'find me a hotel in Lisbon', id: 'c1', agent: 'adk-trips' });
    const search = await heldFor('Lisbon');
    const steer = await client.steer(conversation, { text: 'only under 100 EUR', id: 's1' });
    const turn = (await started(client, conversation, 'c1')).id;
    expect(steer).toEqual({ id: 's1', turn, landed: true });
    search.release();

    const ended = await answered(client, conversation, 'c1');
    expect(ended).toMatchObject({ agent: 'adk-trips', status: 'completed', steered: [{ id: 's1', text: 'only under 100 EUR' }] });
    expect(ended.usage?.totalTokens).toBeGreaterThan(0);
    const next = withText(model.requests, 'only under 100 EUR');
    expect(next).toHaveLength(1);
    expect(userTexts(next[0]).filter((t) => t === 'only under 100 EUR')).toHaveLength(1);
    expect(next[0].body.messages.slice(-2)).toMatchObject([
      { role: 'tool', content: 'lis-2: Alfama Rooms, 85 EUR a night' },
      { role: 'user', content: 'only under 100 EUR' },
    ]);
    expect(next[0].body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('You plan trips.') });
  });

  it("the tokens of ADK's streaming model reach the conversation's event stream", async () => {
    const { client, http } = stack;
    const conversation = key('tokens');
    const stream = await http.events(conversation);
    const tokenText = (read: SseMessage[]) => read.filter((m) => m.event === 'token').map((m) => (m.data as { text: string }).text).join('');
    const reading = readEvents(stream, (_, read) => read.some((m) => m.event === 'turn.ended') && tokenText(read).includes('noted: say something'));
    await client.chat(conversation, { text: 'say something', id: 't', agent: 'adk-trips' });
    expect(tokenText(await reading)).toBe('noted: say something');
  });

  it('a steer sent after the turn ended is answered as a turn of its own, in order', async () => {
    const { client } = stack;
    const conversation = key('late');
    await client.chat(conversation, { text: 'hello', id: 'p', agent: 'adk-trips' });
    await answered(client, conversation, 'p');
    expect(await client.steer(conversation, { text: 'too late', id: 's' })).toEqual({ id: 's', turn: null, landed: false });
    await client.chat(conversation, { text: 'after the steer', id: 'c' });
    const steerTurn = await answered(client, conversation, 's');
    const chatTurn = await answered(client, conversation, 'c');
    expect(steerTurn).toMatchObject({ prompt: { id: 's', text: 'too late' }, content: 'noted: too late' });
    expect(chatTurn.content).toBe('noted: after the steer');
    expect(Date.parse(chatTurn.startedAt)).toBeGreaterThanOrEqual(Date.parse(steerTurn.endedAt!));
  });

  it('a worker SIGKILLed right after a step that took a steer is resumed by another: the steer in place once, no reply asked again, no tool rerun', async () => {
    const { client, model } = stack;
    const conversation = key('crash');
    const doomed = await stack.startWorker({ CRASH_AT: 'after-steer-taken' });
    for (const worker of stack.workers.filter((w) => w !== doomed)) await worker.kill('SIGTERM');
    const prompt = 'find me a hotel in Porto';
    await client.chat(conversation, { text: prompt, id: 'p', agent: 'adk-trips' });
    const search = await heldFor('Porto');
    expect((await client.steer(conversation, { text: 'survive the crash', id: 's' })).landed).toBe(true);
    search.release();
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-steer-taken');

    await stack.startWorker();
    const ended = await answered(client, conversation, 'p', 60_000);
    expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's', text: 'survive the crash' }] });
    const asked = model.requests.filter((r) => userTexts(r).includes(prompt));
    // The first request once (its reply was stored before the crash), then the one with the steer once.
    expect(asked.filter((r) => toolResults(r).length === 0 && lastUserText(r) === prompt)).toHaveLength(1);
    const withSteer = withText(model.requests, 'survive the crash');
    expect(withSteer).toHaveLength(1);
    expect(userTexts(withSteer[0]).filter((t) => t === 'survive the crash')).toHaveLength(1);
    expect(withSteer[0].body.messages.at(-1)).toEqual({ role: 'user', content: 'survive the crash' });
    expect(searches.filter((c) => c === 'Porto')).toHaveLength(1);
  });

  it("book_hotel (ADK's requireConfirmation) parks as an approval; a worker other than the one that parked it runs it once after the decision", async () => {
    const { client, model } = stack;
    const conversation = key('approve');
    const parking = await stack.startWorker();
    for (const worker of stack.workers.filter((w) => w !== parking)) await worker.kill('SIGTERM');
    await client.chat(conversation, { text: 'please book lis-2', id: 'b', agent: 'adk-trips' });
    const [waiting] = await vi.waitFor(
      async () => {
        const { awaiting } = await client.status(conversation);
        if (awaiting.length === 0) throw new Error('no call waits yet');
        return awaiting;
      },
      { ...WAIT, timeout: 20_000 },
    );
    expect(waiting).toMatchObject({ tool: 'book_hotel', arguments: JSON.stringify({ hotelId: 'lis-2' }) });
    const asked = withText(model.requests, 'please book lis-2').length;
    expect(bookings.filter((b) => b.key === waiting.callId)).toEqual([]);

    await parking.kill('SIGKILL');
    const resuming = await stack.startWorker();
    await client.approve(conversation, waiting.approvalId, { arguments: { hotelId: 'lis-1' } });
    const ended = await answered(client, conversation, 'b', 60_000);
    expect(ended.status).toBe('completed');
    expect(ended.content).toContain('B-');
    expect(bookings.filter((b) => b.key === waiting.callId)).toEqual([{ hotelId: 'lis-1', key: waiting.callId, pid: resuming.child.pid }]);
    expect(withText(model.requests, 'please book lis-2')).toHaveLength(asked + 1);
  });

  it("a stop aborts ADK's run and its held search", async () => {
    const { client } = stack;
    const conversation = key('stop');
    await client.chat(conversation, { text: 'find me a hotel in Faro', id: 'p', agent: 'adk-trips' });
    const search = await heldFor('Faro');
    const turn = (await started(client, conversation, 'p')).id;
    expect(await client.stop(conversation, { turn })).toEqual({ turn });
    await search.closed;
    const ended = await answered(client, conversation, 'p');
    expect(ended.status).toBe('stopped');
    search.release();
  });
});
