import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastUserText, reply, toolResults, userTexts, type ModelRequest, type Script } from '@rudder/scripted-model';
import { answered, started, WAIT, startStack, type Stack } from '../../../test/stack';

/**
 * The AI SDK example end to end: its worker process (src/main.ts) runs the team's
 * `ToolLoopAgent` through `aiSdkAgent`. Its tools ask HOTELS_URL — a server here that holds each
 * search open until the test lets it go (so "a steer sent during the tool call" is true by
 * construction), counts every search and booking that ran, in whichever worker, and sees a
 * search aborted.
 */
const script: Script = (request) => {
  if (toolResults(request).length > 0) return reply.text(`found: ${toolResults(request).map((r) => r.content).join('; ')} (asked: ${userTexts(request).join(' / ')})`);
  const book = /book (\w+-\d)/.exec(lastUserText(request));
  if (book) return reply.tools([{ name: 'book_hotel', arguments: { hotelId: book[1], nights: 2 } }], { content: 'Booking it.' });
  const city = /hotel in (\w+)/.exec(lastUserText(request));
  if (city) return reply.tools([{ name: 'search_hotels', arguments: { city: city[1] } }], { content: 'Let me look.' });
  return reply.text(`noted: ${lastUserText(request)}`);
};

let stack: Stack;
let hotels: Server;
/** Searches held open, by city: each answers when let go. */
const held: { city: string; answer: () => void; aborted: Promise<void> }[] = [];
const searches: string[] = [];
const bookings: string[] = [];

function hotelsServer(request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url ?? '/', 'http://hotels');
  if (url.pathname.endsWith('/bookings')) {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      bookings.push(body);
      response.end(`booked: ${body}`);
    });
    return;
  }
  const city = url.searchParams.get('city') ?? '';
  searches.push(city);
  const aborted = new Promise<void>((resolve) => response.on('close', () => response.writableEnded || resolve()));
  held.push({ city, aborted, answer: () => response.end(JSON.stringify([{ id: 'lis-2', name: 'Alfama Rooms', city, pricePerNight: 85 }])) });
}

beforeAll(async () => {
  hotels = createServer(hotelsServer);
  await new Promise<void>((resolve) => hotels.listen(0, '127.0.0.1', resolve));
  const hotelsUrl = `http://127.0.0.1:${(hotels.address() as AddressInfo).port}/hotels`;
  stack = await startStack({ script, workerEntry: 'examples/ai-sdk-trips/src/main.ts', workerEnv: { HOTELS_URL: hotelsUrl } });
});
afterAll(async () => {
  for (const search of held) search.answer();
  await stack?.stop();
  hotels?.close();
});

/** The search of `city` the agent holds open now. */
const heldSearch = (city: string) => vi.waitFor(() => held.find((s) => s.city === city) ?? Promise.reject(new Error(`no search of ${city} is held`)), WAIT);
const requestsWith = (text: string) => stack.model.requests.filter((r: ModelRequest) => userTexts(r).includes(text));

describe('an AI SDK agent behind Rudder', () => {
  it('a steer sent while its search tool runs lands, and is in the very next model request once, right after the result', async () => {
    const { client } = stack;
    const conversation = `ai-sdk/steer-${Date.now()}`;
    await client.chat(conversation, { text: 'find me a hotel in Lisbon', id: 'c1', agent: 'ai-sdk-trips' });
    const search = await heldSearch('Lisbon');
    const turn = (await started(client, conversation, 'c1')).id;
    expect(await client.steer(conversation, { text: 'only under 100 EUR', id: 's1' })).toEqual({ id: 's1', turn, landed: true });
    search.answer();

    const ended = await answered(client, conversation, 'c1');
    expect(ended).toMatchObject({ agent: 'ai-sdk-trips', status: 'completed', steered: [{ id: 's1', text: 'only under 100 EUR' }] });
    expect(ended.content).toContain('(asked: find me a hotel in Lisbon / only under 100 EUR)');
    expect(ended.usage?.totalTokens).toBeGreaterThan(0);
    const next = requestsWith('only under 100 EUR');
    expect(next).toHaveLength(1);
    expect(next[0].body.messages.slice(-2)).toMatchObject([
      { role: 'tool', content: JSON.stringify([{ id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 }]) },
      { role: 'user', content: 'only under 100 EUR' },
    ]);
    expect(next[0].body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('You plan trips.') });

    // Too late for that turn: answered as a turn of its own, after it, with the earlier turn as its history.
    expect(await client.steer(conversation, { text: 'and a view of the river', id: 's2' })).toEqual({ id: 's2', turn: null, landed: false });
    const own = await answered(client, conversation, 's2');
    expect(own).toMatchObject({ status: 'completed', content: 'noted: and a view of the river', prompt: { id: 's2' } });
    expect(userTexts(requestsWith('and a view of the river')[0])).toEqual(['find me a hotel in Lisbon', 'only under 100 EUR', 'and a view of the river']);
  });

  it('a worker killed right after the step that took a steer is resumed by another: the steer in place once, no reply asked again, no tool run again', async () => {
    const { client } = stack;
    const conversation = `ai-sdk/crash-${Date.now()}`;
    const doomed = await stack.startWorker({ CRASH_AT: 'after-steer-taken' });
    for (const worker of stack.workers.filter((w) => w !== doomed)) await worker.kill('SIGTERM');
    stack.workers.splice(0, stack.workers.length, doomed);
    await client.chat(conversation, { text: 'a hotel in Porto', id: 'c1', agent: 'ai-sdk-trips' });
    const search = await heldSearch('Porto');
    await client.steer(conversation, { text: 'near the river', id: 's1' });
    search.answer();
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-steer-taken');
    stack.workers.splice(0);
    await stack.startWorker();

    const ended = await answered(client, conversation, 'c1', 60_000);
    expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's1', text: 'near the river' }] });
    expect(searches.filter((c) => c === 'Porto')).toHaveLength(1);
    expect(stack.model.requests.filter((r) => userTexts(r)[0] === 'a hotel in Porto' && toolResults(r).length === 0)).toHaveLength(1);
    const withSteer = requestsWith('near the river');
    expect(withSteer).toHaveLength(1);
    expect(userTexts(withSteer[0]).filter((t) => t === 'near the river')).toHaveLength(1);
    expect(withSteer[0].body.messages.at(-1)).toEqual({ role: 'user', content: 'near the river' });
  });

  it("a booking (the tool's own needsApproval) parks the turn; another worker resumes it after the approval and books once", async () => {
    const { client } = stack;
    const conversation = `ai-sdk/book-${Date.now()}`;
    await client.chat(conversation, { text: 'book lis-2 please', id: 'b1', agent: 'ai-sdk-trips' });
    const [waiting] = await vi.waitFor(async () => {
      const { awaiting } = await client.status(conversation);
      if (awaiting.length === 0) throw new Error('no call waits yet');
      return awaiting;
    }, { ...WAIT, timeout: 20_000 });
    expect(waiting).toMatchObject({ tool: 'book_hotel', arguments: JSON.stringify({ hotelId: 'lis-2', nights: 2 }) });
    for (const worker of stack.workers.splice(0)) await worker.kill('SIGKILL');
    await stack.startWorker();
    await client.approve(conversation, waiting.approvalId, { arguments: { hotelId: 'lis-2', nights: 3 } });

    const ended = await answered(client, conversation, 'b1', 60_000);
    expect(ended).toMatchObject({ status: 'completed', approvals: [{ state: 'approved' }] });
    expect(bookings).toEqual([JSON.stringify({ hotelId: 'lis-2', nights: 3 })]);
    expect(ended.content).toContain('run with arguments edited by the user');
  });

  it("a stop aborts the AI SDK's run and the search it holds open; the turn ends stopped", async () => {
    const { client } = stack;
    const conversation = `ai-sdk/stop-${Date.now()}`;
    await client.chat(conversation, { text: 'a hotel in Faro', id: 'f1', agent: 'ai-sdk-trips' });
    const search = await heldSearch('Faro');
    const turn = (await started(client, conversation, 'f1')).id;
    await client.stop(conversation, { turn });
    await search.aborted;
    expect(await answered(client, conversation, 'f1')).toMatchObject({ status: 'stopped' });
    expect(stack.model.requests.filter((r) => userTexts(r).includes('a hotel in Faro'))).toHaveLength(1);
  });
});
