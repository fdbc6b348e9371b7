import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastMessage, lastUserText, messageText, reply, toolResults, userTexts, type Script } from '@rudder/scripted-model';
import { answered, started, WAIT, startStack, type Stack } from '../../../test/stack';

/**
 * The LangGraph example end to end: its worker process (src/main.ts) runs the team's
 * `createAgent` agent through @rudder/langgraph, and a graph of the team's own. Their hotel
 * search asks HOTELS_URL — a server here that holds each search open until the test lets it
 * go, so "a steer sent during the tool call" is true by construction, and counts the searches
 * (a tool run again would search again). The tests that kill a worker start their own; the
 * others share one.
 */
const script: Script = (request) => {
  const last = lastMessage(request);
  if (toolResults(request).length > 0) {
    return reply.text(`found: ${toolResults(request).map((r) => r.content).join('; ')} (asked: ${userTexts(request).join(' / ')})`);
  }
  // The team's graph: its search node's message, then its model.
  if (last?.role === 'assistant') return reply.text(`picked from ${messageText(last)}`);
  const book = /book (\S+)/.exec(lastUserText(request));
  if (book) return reply.tools([{ name: 'book_hotel', arguments: { hotelId: book[1] } }], { content: 'Booking.' });
  const city = /hotel in (\w+)/.exec(lastUserText(request));
  if (city) return reply.tools([{ name: 'search_hotels', arguments: { city: city[1] } }], { content: 'Let me look.' });
  return reply.text(`noted: ${lastUserText(request)}`);
};

type Search = { city: string; release: () => void; aborted: boolean };
let stack: Stack;
let rates: Server;
const searches: Search[] = [];
beforeAll(async () => {
  rates = createServer((request, response) => {
    const city = new URL(request.url ?? '/', 'http://localhost').searchParams.get('city') ?? '';
    const search: Search = { city, aborted: false, release: () => response.end(JSON.stringify([{ id: 'lis-2', name: 'Alfama Rooms', city, pricePerNight: 85 }])) };
    response.on('close', () => {
      if (!response.writableEnded) search.aborted = true;
    });
    searches.push(search);
  });
  await new Promise<void>((resolve) => rates.listen(0, '127.0.0.1', resolve));
  const hotelsUrl = `http://127.0.0.1:${(rates.address() as AddressInfo).port}/rates`;
  stack = await startStack({ script, workers: 0, workerEntry: 'examples/langgraph-trips/src/main.ts', workerEnv: { HOTELS_URL: hotelsUrl } });
});
afterAll(async () => {
  for (const search of searches) search.release();
  await stack?.stop();
  rates?.close();
});

const key = (name: string) => `langgraph/${name}-${Math.random().toString(36).slice(2, 8)}`;
/** The search for `city`, once the tool asks the rates server. */
const searchFor = (city: string) =>
  vi.waitFor(() => {
    const search = searches.find((s) => s.city === city);
    if (!search) throw new Error(`no search for ${city} yet`);
    return search;
  }, WAIT);

describe('the LangGraph trips example', () => {
  describe('on one worker', () => {
    beforeAll(async () => {
      await stack.startWorker();
    });
    afterAll(() => stack.stopWorkers());

    it('a steer sent while search_hotels is held open lands, and is in the very next model request once, right after the result', async () => {
      const { client, http, model } = stack;
      const conversation = key('steer');
      expect((await http.post(conversation, '/chat', { text: 'find me a hotel in Lisbon', id: 'c1', agent: 'langgraph-trips' })).status).toBe(202);
      const search = await searchFor('Lisbon');
      const turn = (await started(client, conversation, 'c1')).id;
      expect(await client.steer(conversation, { text: 'only under 100 EUR', id: 's1' })).toEqual({ id: 's1', turn, landed: true });
      search.release();

      const ended = await answered(client, conversation, 'c1');
      expect(ended).toMatchObject({ agent: 'langgraph-trips', status: 'completed', steered: [{ id: 's1', text: 'only under 100 EUR' }] });
      expect(ended.usage?.totalTokens).toBeGreaterThan(0);
      const next = model.requests.filter((r) => userTexts(r).includes('only under 100 EUR'));
      expect(next).toHaveLength(1);
      expect(next[0].body.messages.slice(-2)).toMatchObject([
        { role: 'tool', content: 'lis-2: Alfama Rooms, 85 EUR a night' },
        { role: 'user', content: 'only under 100 EUR' },
      ]);
      // The agent's own system prompt (LangChain sends it as text parts).
      expect(next[0].body.messages[0].role).toBe('system');
      expect(messageText(next[0].body.messages[0])).toContain('You plan trips.');
    });
    it('a steer sent after the turn ended is answered as a turn of its own, in order', async () => {
      const { client } = stack;
      const conversation = key('late');
      await client.chat(conversation, { text: 'hello', id: 'h1', agent: 'langgraph-trips' });
      await answered(client, conversation, 'h1');
      expect(await client.steer(conversation, { text: 'too late', id: 's1' })).toEqual({ id: 's1', turn: null, landed: false });
      await client.chat(conversation, { text: 'after the steer', id: 'c2' });
      const steerTurn = await answered(client, conversation, 's1');
      const chatTurn = await answered(client, conversation, 'c2');
      expect(steerTurn).toMatchObject({ prompt: { id: 's1', text: 'too late' }, content: 'noted: too late' });
      expect(Date.parse(chatTurn.startedAt)).toBeGreaterThanOrEqual(Date.parse(steerTurn.endedAt!));
    });
    it("a stop aborts the agent's run and the search it holds", async () => {
      const { client } = stack;
      const conversation = key('stop');
      await client.chat(conversation, { text: 'find me a hotel in Faro', id: 'c1', agent: 'langgraph-trips' });
      const search = await searchFor('Faro');
      await client.stop(conversation);
      expect(await answered(client, conversation, 'c1')).toMatchObject({ status: 'stopped' });
      await vi.waitFor(() => expect(search.aborted, 'the held search aborted').toBe(true), WAIT);
    });
    it('a graph it cannot enter (langGraphGraph) answers a steer landed: false and runs it as its own turn after, storing its reply', async () => {
      const { client } = stack;
      const conversation = key('graph');
      await client.chat(conversation, { text: 'a hotel in Coimbra', id: 'g1', agent: 'langgraph-trips-graph' });
      const search = await searchFor('Coimbra');
      await started(client, conversation, 'g1');
      expect(await client.steer(conversation, { text: 'with parking', id: 's1' })).toEqual({ id: 's1', turn: null, landed: false });
      search.release();
      const first = await answered(client, conversation, 'g1');
      expect(first).toMatchObject({ status: 'completed', steered: [], content: 'picked from hotels: lis-2: Alfama Rooms, 85 EUR a night' });
      expect(first.usage?.totalTokens).toBeGreaterThan(0);
      const steerTurn = await answered(client, conversation, 's1');
      expect(steerTurn.prompt).toEqual({ id: 's1', text: 'with parking' });
      expect(Date.parse(steerTurn.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.endedAt!));
      expect(steerTurn.content).toBe('picked from hotels: no city named');
    });
  });

  describe('with workers killed on purpose (each test starts its own)', () => {
    afterEach(() => stack.stopWorkers());

    it('a worker killed right after the step that took a steer is resumed by another: the steer in place once, no reply asked again, no tool run again', async () => {
      const doomed = await stack.startWorker({ CRASH_AT: 'after-steer-taken' });
      const { client, model } = stack;
      const conversation = key('crash');
      await client.chat(conversation, { text: 'find me a hotel in Porto', id: 'c1', agent: 'langgraph-trips' });
      const search = await searchFor('Porto');
      expect(await client.steer(conversation, { text: 'near the river', id: 's1' })).toMatchObject({ landed: true });
      search.release();
      await doomed.exited;
      expect(doomed.output()).toContain('crashing at after-steer-taken');
      await stack.startWorker();

      const ended = await answered(client, conversation, 'c1', 60_000);
      expect(ended).toMatchObject({ status: 'completed', steered: [{ id: 's1', text: 'near the river' }] });
      const asked = model.requests.filter((r) => userTexts(r).includes('find me a hotel in Porto'));
      expect(asked.filter((r) => toolResults(r).length === 0)).toHaveLength(1);
      const afterTool = asked.filter((r) => toolResults(r).length > 0);
      expect(afterTool).toHaveLength(1);
      expect(userTexts(afterTool[0]).filter((t) => t === 'near the river')).toHaveLength(1);
      expect(searches.filter((s) => s.city === 'Porto')).toHaveLength(1);
    });
    it('a booking waits for approval (its humanInTheLoopMiddleware config); another worker than the one that parked it runs it once after the approval', async () => {
      const first = await stack.startWorker();
      const { client } = stack;
      const conversation = key('approve');
      await client.chat(conversation, { text: 'book lis-2', id: 'b1', agent: 'langgraph-trips' });
      const [waiting] = await vi.waitFor(
        async () => {
          const { awaiting } = await client.status(conversation);
          if (awaiting.length === 0) throw new Error('nothing waits yet');
          return awaiting;
        },
        { ...WAIT, timeout: 20_000 },
      );
      expect(waiting).toMatchObject({ tool: 'book_hotel', arguments: JSON.stringify({ hotelId: 'lis-2' }) });
      await first.kill('SIGKILL');
      stack.workers.splice(stack.workers.indexOf(first), 1);
      const second = await stack.startWorker();
      await client.approve(conversation, waiting.approvalId);
      const ended = await answered(client, conversation, 'b1', 60_000);
      expect(ended).toMatchObject({ status: 'completed', approvals: [{ state: 'approved' }] });
      expect(ended.content).toContain(`found: booked Alfama Rooms (B-1) by worker ${second.child.pid}`);
    });
  });
});
