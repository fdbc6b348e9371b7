import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastMessage, lastUserText, reply, toolResults, userTexts, type ModelRequest, type Script } from '@rudder/scripted-model';
import { answered, started, WAIT, startStack, type Stack } from '../../../test/stack';

/**
 * The OpenAI Agents SDK example end to end: its worker process (src/main.ts) runs the framework's
 * agent through @rudder/openai-agents, on the framework's Chat Completions model pointed at the
 * scripted model. Its hotel service asks HOTELS_URL — a server here that holds every search open
 * until the test lets it go (so "a steer sent during the tool call" is true by construction) and
 * records every booking.
 */
const script: Script = (request) => {
  if (toolResults(request).length > 0) {
    return reply.text(`found: ${toolResults(request).map((r) => r.content).join('; ')} (asked: ${userTexts(request).join(' / ')})`);
  }
  const city = /hotel in (\w+)/.exec(lastUserText(request));
  if (city) return reply.tools([{ name: 'search_hotels', arguments: { city: city[1] } }], { content: 'Let me look.' });
  const book = /book (\S+)/.exec(lastUserText(request));
  if (book) return reply.tools([{ name: 'book_hotel', arguments: { hotelId: book[1] } }]);
  return reply.text(`noted: ${lastUserText(request)}`);
};

let stack: Stack;
let hotels: Server;
/** Searches the hotel service holds, by city, each with its release; and whether its caller gave up on it. */
const searches: { city: string; release: () => void; aborted: boolean }[] = [];
const bookings: { hotelId: string; reference: string }[] = [];
beforeAll(async () => {
  hotels = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://hotels');
    if (request.method === 'POST') {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const booking = JSON.parse(body) as { hotelId: string; reference: string };
        bookings.push(booking);
        response.end(JSON.stringify(booking));
      });
      return;
    }
    const search = { city: url.searchParams.get('city') ?? '', aborted: false, release: () => response.end(JSON.stringify([{ id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 }])) };
    response.on('close', () => (search.aborted = !response.writableEnded));
    searches.push(search);
  });
  await new Promise<void>((resolve) => hotels.listen(0, '127.0.0.1', resolve));
  const hotelsUrl = `http://127.0.0.1:${(hotels.address() as AddressInfo).port}/rates`;
  stack = await startStack({ script, workerEntry: 'examples/openai-agents-trips/src/main.ts', workerEnv: { HOTELS_URL: hotelsUrl } });
});
afterAll(async () => {
  for (const search of searches) search.release();
  await stack?.stop();
  hotels?.close();
});

const key = (name: string) => `openai-trips/${name}-${Math.random().toString(36).slice(2, 8)}`;
/** The search of a city the service holds, once the tool asked for it. */
const heldSearch = (city: string) =>
  vi.waitFor(() => {
    const search = searches.find((s) => s.city === city);
    if (!search) throw new Error(`no search of ${city} yet`);
    return search;
  }, WAIT);
const requestsWith = (text: string) => stack.model.requests.filter((r: ModelRequest) => userTexts(r).includes(text));

describe('the OpenAI Agents SDK trip planner behind Rudder', () => {
  it('a steer sent while search_hotels is held open lands, and is in the very next model request once, after the result', async () => {
    const { client, http } = stack;
    const conversation = key('steer');
    expect((await http.post(conversation, '/chat', { text: 'find me a hotel in Lisbon', id: 'c1', agent: 'openai-trips' })).status).toBe(202);
    const search = await heldSearch('Lisbon');
    const turn = (await started(client, conversation, 'c1')).id;
    expect(await client.steer(conversation, { text: 'only under 100 EUR', id: 's1' })).toEqual({ id: 's1', turn, landed: true });
    search.release();

    const ended = await answered(client, conversation, 'c1');
    expect(ended).toMatchObject({ agent: 'openai-trips', status: 'completed', steered: [{ id: 's1', text: 'only under 100 EUR' }] });
    expect(ended.content).toContain('found: lis-2: Alfama Rooms, 85 EUR a night (asked: find me a hotel in Lisbon / only under 100 EUR)');
    expect(ended.usage?.totalTokens).toBeGreaterThan(0);
    const next = requestsWith('only under 100 EUR');
    expect(next).toHaveLength(1);
    expect(userTexts(next[0]).filter((t) => t === 'only under 100 EUR')).toHaveLength(1);
    expect(next[0].body.messages.slice(-2)).toMatchObject([
      { role: 'tool', content: 'lis-2: Alfama Rooms, 85 EUR a night' },
      { role: 'user', content: 'only under 100 EUR' },
    ]);
    expect(next[0].body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('You plan trips.') });
  });

  it('a steer sent after the turn ended is too late: it is answered as a turn of its own, in order', async () => {
    const { client } = stack;
    const conversation = key('late');
    await client.chat(conversation, { text: 'hello', id: 'h1', agent: 'openai-trips' });
    await answered(client, conversation, 'h1');
    expect(await client.steer(conversation, { text: 'and in Celsius', id: 's2' })).toEqual({ id: 's2', turn: null, landed: false });
    await client.chat(conversation, { text: 'thanks', id: 'h2' });
    const steerTurn = await answered(client, conversation, 's2');
    const chatTurn = await answered(client, conversation, 'h2');
    expect(steerTurn).toMatchObject({ status: 'completed', prompt: { id: 's2', text: 'and in Celsius' }, content: 'noted: and in Celsius' });
    expect(Date.parse(chatTurn.startedAt)).toBeGreaterThanOrEqual(Date.parse(steerTurn.endedAt!));
    // The steer's turn carries the earlier turn as history, as the framework's own input.
    expect(requestsWith('and in Celsius')[0].body.messages.slice(1).map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('a worker SIGKILLed right after the step that took a steer is resumed by another: the steer in place once, no reply asked again, no tool rerun', async () => {
    const { client } = stack;
    const conversation = key('crash');
    const doomed = await stack.startWorker({ CRASH_AT: 'after-steer-taken' });
    for (const worker of stack.workers.filter((w) => w !== doomed)) await worker.kill('SIGTERM');
    stack.workers.splice(0, stack.workers.length, doomed);
    await client.chat(conversation, { text: 'a hotel in Porto please', id: 'p', agent: 'openai-trips' });
    const search = await heldSearch('Porto');
    await client.steer(conversation, { text: 'survive the crash', id: 's' });
    search.release();
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-steer-taken');
    await stack.startWorker();

    const ended = await answered(client, conversation, 'p', 60_000);
    expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's', text: 'survive the crash' }] });
    expect(searches.filter((s) => s.city === 'Porto')).toHaveLength(1);
    const first = stack.model.requests.filter((r) => userTexts(r).includes('a hotel in Porto please') && toolResults(r).length === 0 && lastMessage(r)?.role === 'user');
    expect(first).toHaveLength(1);
    const withSteer = requestsWith('survive the crash');
    expect(withSteer).toHaveLength(1);
    expect(userTexts(withSteer[0]).filter((t) => t === 'survive the crash')).toHaveLength(1);
    expect(withSteer[0].body.messages.slice(-2)).toMatchObject([{ role: 'tool' }, { role: 'user', content: 'survive the crash' }]);
  });

  it("book_hotel's own needsApproval parks the turn; a worker other than the one that parked it runs it once after the approval", async () => {
    const { client } = stack;
    const conversation = key('approve');
    await client.chat(conversation, { text: 'book lis-2', id: 'b', agent: 'openai-trips' });
    const [waiting] = await vi.waitFor(async () => {
      const { awaiting } = await client.status(conversation);
      if (awaiting.length === 0) throw new Error('no call waits yet');
      return awaiting;
    }, WAIT);
    expect(waiting).toMatchObject({ tool: 'book_hotel', arguments: '{"hotelId":"lis-2"}' });
    expect(bookings.filter((b) => b.hotelId === 'lis-2')).toEqual([]);
    for (const worker of stack.workers.splice(0)) await worker.kill('SIGKILL');
    await stack.startWorker();
    await client.approve(conversation, waiting.approvalId);

    const ended = await answered(client, conversation, 'b', 60_000);
    expect(ended).toMatchObject({ status: 'completed', content: `found: booked lis-2 (reference ${waiting.callId}) (asked: book lis-2)` });
    expect(bookings.filter((b) => b.reference === waiting.callId)).toEqual([{ hotelId: 'lis-2', reference: waiting.callId }]);
  });

  it("a stop aborts the framework's run and the search it holds", async () => {
    const { client } = stack;
    const conversation = key('stop');
    await client.chat(conversation, { text: 'a hotel in Faro', id: 'f', agent: 'openai-trips' });
    const search = await heldSearch('Faro');
    await client.stop(conversation);
    const ended = await answered(client, conversation, 'f');
    expect(ended.status).toBe('stopped');
    await vi.waitFor(() => expect(search.aborted).toBe(true), WAIT);
    expect(requestsWith('a hotel in Faro')).toHaveLength(1);
  });
});
