import { MessagesAnnotation, StateGraph } from '@langchain/langgraph';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, createMiddleware, humanInTheLoopMiddleware, modelRetryMiddleware, tool, trimMessages, type AgentMiddleware } from 'langchain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextBudget, evolveTurn, startTurn, type Agent, type TurnState } from '@rudder/agent';
import { memoryTurn } from '@rudder/agent/testing';
import type { DomainEvent } from '@rudder/contracts';
import { lastMessage, messageText, reply, startScriptedModel, toolResults, userTexts, type ModelRequest, type ScriptedModel } from '@rudder/scripted-model';
import { durableTurnLoop, type InterruptOn } from './langgraph-agent';
import { langGraphGraph } from './langgraph-graph';

/**
 * The adapter against the real LangGraph.js packages: `createAgent` of `langchain` with a
 * `ChatOpenAI` on the scripted model over HTTP, run through a DurableTurn on a store of the
 * test's own that takes steers as the conversation's decider does (at the commit that closes a
 * step, or in place of a completed end), as durable-turn.unit.spec.ts does.
 */
let server: ScriptedModel;
let flaked = false;
beforeAll(async () => {
  server = await startScriptedModel({
    script: (request) => {
      const results = toolResults(request);
      if (results.length > 0) {
        // "search twice": a second search after the first one's result, then the answer.
        const [call] = request.body.messages.findLast((m) => m.role === 'assistant')?.tool_calls ?? [];
        const searched = call?.type === 'function' ? (JSON.parse(call.function.arguments) as { city?: string }).city : undefined;
        if (searched === 'City0') return reply.tools([{ name: 'search_hotels', arguments: { city: 'City1' } }]);
        if (searched === 'City1') return reply.text('both searched');
        return reply.text(`done after ${results.map((r) => r.content).join('; ')}`);
      }
      const asked = messageText(lastMessage(request));
      if (asked === 'flaky' && !flaked) {
        flaked = true;
        return { status: 500, error: 'the model is down for a moment' };
      }
      const city = /hotel in (\w+)/.exec(asked);
      if (city) return reply.tools([{ name: 'search_hotels', arguments: { city: city[1] } }], { content: 'Let me look.' });
      const book = /book (\S+)/.exec(asked);
      if (book) return reply.tools([{ name: 'book_hotel', arguments: { hotelId: book[1] } }]);
      if (/twice/.test(asked)) return reply.tools([{ name: 'search_hotels', arguments: { city: 'City0' } }]);
      return reply.text(`answer to ${asked}`);
    },
  });
});
afterAll(() => server?.stop());

const chatModel = () => new ChatOpenAI({ model: 'scripted', apiKey: 'test', configuration: { baseURL: server.url }, streaming: true, maxRetries: 0 });
const agentLimits: Agent = { systemPrompt: '', tools: [], maxSteps: 8, context: contextBudget({ maxTokens: 100_000 }), todos: false };

type Options = { steers?: { id: string; text: string }[]; turn?: TurnState; text?: string; interruptOn?: InterruptOn; middleware?: AgentMiddleware[]; tools?: StructuredToolInterface[]; signal?: AbortSignal };

/** The team's agent (its tools log their runs), run once through the adapter's loop on an in-memory store. */
function harness(options: Options = {}) {
  const runs: string[] = [];
  const tokens: string[] = [];
  const prompt = { id: 'in-1', text: options.text ?? 'find a hotel in Lisbon', messages: [options.text ?? 'find a hotel in Lisbon'], subject: 'alice' };
  const memory = memoryTurn({ turn: options.turn ?? startTurn('t1', prompt), steers: [...(options.steers ?? [])], signal: options.signal, agent: agentLimits });
  const searchHotels = tool(
    async ({ city }) => {
      runs.push(`search_hotels ${city}`);
      return `hotels in ${city}: Alfama Rooms`;
    },
    { name: 'search_hotels', description: 'Searches hotels in a city.', schema: z.object({ city: z.string() }) },
  );
  const bookHotel = tool(
    async ({ hotelId }) => {
      runs.push(`book_hotel ${hotelId}`);
      return `booked ${hotelId}`;
    },
    { name: 'book_hotel', description: 'Books a hotel.', schema: z.object({ hotelId: z.string() }) },
  );
  const interruptOn = options.interruptOn ?? { book_hotel: true };
  const agent = createAgent({
    model: chatModel(),
    tools: options.tools ?? [searchHotels, bookHotel],
    systemPrompt: 'You plan trips.',
    middleware: [humanInTheLoopMiddleware({ interruptOn }), ...(options.middleware ?? [])],
  });
  const loop = durableTurnLoop(agent, { interruptOn });
  const before = server.requests.length;
  // Each run from the turn as stored then; tokens said with their step.
  const run = () => loop({ ...memory.options, turn: memory.turn(), onToken: (step, text) => tokens.push(`${step}:${text}`) });
  return { run, runs, tokens, log: memory.log, requests: () => server.requests.slice(before), turn: memory.turn };
}

const roles = (request: ModelRequest) => request.body.messages.map((m) => m.role);
const callIds = (request: ModelRequest) => request.body.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : m.role === 'tool' ? [m.tool_call_id] : []));

describe('a LangGraph agent run through the adapter', () => {
  it("a steer taken during a tool call is in the very next model request once, right after the call's result, as LangChain's own user message", async () => {
    const h = harness({ steers: [{ id: 's1', text: 'only under 100 EUR' }] });
    const ended = await h.run();
    const [first, second] = h.requests();
    expect(h.requests()).toHaveLength(2);
    expect(userTexts(first)).toEqual(['find a hotel in Lisbon']);
    expect(roles(second)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(second.body.messages.at(-1)).toMatchObject({ role: 'user', content: 'only under 100 EUR' });
    expect(h.runs).toEqual(['search_hotels Lisbon']);
    expect(ended).toMatchObject({ steered: [{ id: 's1', text: 'only under 100 EUR' }], answers: ['Let me look.', 'done after hotels in Lisbon: Alfama Rooms'] });
    expect(h.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed' } });
    // The reply's tokens streamed to its step, and the usage of each reply is stored.
    expect(h.tokens.filter((t) => t.startsWith('1:')).map((t) => t.slice(2)).join('')).toBe('done after hotels in Lisbon: Alfama Rooms');
    const replied = h.log.filter((e) => e.type === 'model.replied');
    expect(replied.map((e) => e.type === 'model.replied' && e.data.usage?.totalTokens)).toEqual([expect.any(Number), expect.any(Number)]);
  });

  it('a steer that lands with the final answer takes one more step: the agent runs again from the turn so far', async () => {
    const h = harness({ text: 'hello', steers: [{ id: 's1', text: 'in Celsius' }] });
    const ended = await h.run();
    expect(h.requests()).toHaveLength(2);
    expect(h.requests()[1].body.messages.slice(1)).toMatchObject([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'answer to hello' },
      { role: 'user', content: 'in Celsius' },
    ]);
    expect(ended.answers).toEqual(['answer to hello', 'answer to in Celsius']);
    expect(h.log.filter((e) => e.type === 'turn.ended')).toHaveLength(1);
  });

  it('a run resumed from the stored turn asks no stored reply again, reruns no stored tool, and the agent sees the same call ids', async () => {
    const first = harness({ steers: [{ id: 's1', text: 'only under 100 EUR' }] });
    await first.run();
    // The log as stored when the worker died: the step that took the steer is committed.
    const upToSteer = first.log.slice(0, first.log.findIndex((e) => e.type === 'steer.taken') + 1);
    const resumed = harness({ turn: upToSteer.reduce(evolveTurn, startTurn('t1', { id: 'in-1', text: 'find a hotel in Lisbon', messages: ['find a hotel in Lisbon'], subject: 'alice' })) });
    const ended = await resumed.run();
    expect(resumed.runs).toEqual([]);
    expect(resumed.requests()).toHaveLength(1);
    const [request] = resumed.requests();
    expect(userTexts(request).filter((t) => t === 'only under 100 EUR')).toHaveLength(1);
    expect(callIds(request)).toEqual(callIds(first.requests()[1]));
    expect(resumed.log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
    expect(ended.answers).toEqual(['Let me look.', 'done after hotels in Lisbon: Alfama Rooms']);
  });

  it('a call its humanInTheLoopMiddleware interrupts on parks the turn instead, and the run after an approval with edited arguments runs it once with them', async () => {
    const h = harness({ text: 'book lis-1' });
    const parked = await h.run();
    expect(Object.values(parked.approvals)).toMatchObject([{ status: 'awaiting' }]);
    expect(h.runs).toEqual([]);
    const requested = h.log.find((e) => e.type === 'approval.requested');
    if (requested?.type !== 'approval.requested') throw new Error('no approval requested');
    const { approval, call } = requested.data;
    const decided: DomainEvent = {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval, callId: call.id, tool: 'book_hotel', decision: 'approve', arguments: '{"hotelId":"lis-2"}', reason: null, subject: 'alice', input: null },
    };
    const resumed = harness({ text: 'book lis-1', turn: evolveTurn(parked, decided) });
    await resumed.run();
    expect(resumed.runs).toEqual(['book_hotel lis-2']);
    expect(resumed.requests()).toHaveLength(1);
    expect(resumed.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed' } });
    expect(toolResults(resumed.requests()[0])[0].content).toContain('booked lis-2');
  });

  it('a denied call is not run; the model reads the denial', async () => {
    const h = harness({ text: 'book lis-1' });
    const parked = await h.run();
    const requested = h.log.find((e) => e.type === 'approval.requested');
    if (requested?.type !== 'approval.requested') throw new Error('no approval requested');
    const decided: DomainEvent = {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval: requested.data.approval, callId: requested.data.call.id, tool: 'book_hotel', decision: 'deny', arguments: null, reason: 'too dear', subject: 'alice', input: null },
    };
    const resumed = harness({ text: 'book lis-1', turn: evolveTurn(parked, decided) });
    await resumed.run();
    expect(resumed.runs).toEqual([]);
    expect(resumed.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed' } });
    expect(toolResults(resumed.requests()[0])[0].content).toMatch(/denied.*too dear/);
  });

  it('a request the team trims (trimMessages in its own middleware) never starts at a steered message: a steer whose results it trimmed is left out', async () => {
    // The team keeps the last two messages of the history: the latest call and its result.
    const trimming = createMiddleware({
      name: 'KeepTheLatest',
      wrapModelCall: async (request, handler) =>
        handler({ ...request, messages: await trimMessages(request.messages, { maxTokens: 2, strategy: 'last', tokenCounter: (messages) => messages.length }) }),
    });
    const h = harness({ text: 'search twice', steers: [{ id: 's1', text: 'prefer the old town' }], middleware: [trimming] });
    const ended = await h.run();
    const requests = h.requests();
    expect(requests).toHaveLength(3);
    for (const request of requests) expect(messageText(request.body.messages[1])).not.toBe('prefer the old town');
    expect(roles(requests[1])).toEqual(['system', 'assistant', 'tool', 'user']);
    expect(userTexts(requests[1])).toEqual(['prefer the old town']);
    expect(roles(requests[2])).toEqual(['system', 'assistant', 'tool']);
    expect(ended.steered).toMatchObject([{ id: 's1' }]);
    expect(h.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed' } });
  });

  it("an agent run as a tool (a sub-agent) gets no steer and stores nothing as the turn's steps", async () => {
    const scout = createAgent({ model: chatModel(), tools: [], systemPrompt: 'You scout neighbourhoods.' });
    const askScout = tool(
      async ({ city }, config) => {
        const state = await scout.invoke({ messages: [{ role: 'user', content: `scout ${city}` }] }, config);
        return state.messages.at(-1)?.text ?? '';
      },
      { name: 'search_hotels', description: 'Asks the scout.', schema: z.object({ city: z.string() }) },
    );
    // The steer is taken at the first call's step; the second call's scout runs after it.
    const h = harness({ text: 'search twice', steers: [{ id: 's1', text: 'only under 100 EUR' }], tools: [askScout] });
    const ended = await h.run();
    const nested = h.requests().filter((r) => userTexts(r).some((t) => t.startsWith('scout ')));
    expect(nested.map(userTexts)).toEqual([['scout City0'], ['scout City1']]);
    expect(h.log.filter((e) => e.type === 'model.replied')).toHaveLength(3);
    expect(h.log.filter((e) => e.type === 'tool.ended').map((e) => e.type === 'tool.ended' && e.data.result)).toEqual(['answer to scout City0', 'answer to scout City1']);
    expect(userTexts(h.requests().at(-1)!).filter((t) => t === 'only under 100 EUR')).toHaveLength(1);
    expect(h.tokens.join('')).not.toContain('scout');
    expect(ended.answers).toEqual(['both searched']);
  });
});

describe('a tool that throws', () => {
  it('is stored as the call\'s error result, which the model reads as a ToolMessage; the run goes on', async () => {
    const failing = tool(
      async () => {
        throw new Error('the rates service is down');
      },
      { name: 'search_hotels', description: 'Fails.', schema: z.object({ city: z.string() }) },
    );
    const h = harness({ tools: [failing] });
    const ended = await h.run();
    expect(h.log.find((e) => e.type === 'tool.ended')).toMatchObject({ data: { result: 'the rates service is down', isError: true } });
    expect(toolResults(h.requests()[1]).map((r) => r.content)).toEqual(['the rates service is down']);
    expect(ended.answers).toEqual(['Let me look.', 'done after the rates service is down']);
  });
});

describe("the team's model retries (modelRetryMiddleware)", () => {
  it('a request that failed and is asked again is the same step: its reply is stored once', async () => {
    const h = harness({ text: 'flaky', middleware: [modelRetryMiddleware({ maxRetries: 2, initialDelayMs: 1 })] });
    const ended = await h.run();
    expect(h.requests()).toHaveLength(2);
    expect(ended.answers).toEqual(['answer to flaky']);
    expect(h.log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
  });
});

describe('a stop', () => {
  it("aborts the agent's run and the tool it holds: the tool sees LangGraph's abort signal, nothing more is asked or stored", async () => {
    const stop = new AbortController();
    let aborted = false;
    const held = tool(
      async (_, config) =>
        new Promise<string>((_resolve, reject) => {
          config.signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
          setTimeout(() => stop.abort(new Error('stop')), 50);
        }),
      { name: 'search_hotels', description: 'Held.', schema: z.object({ city: z.string() }) },
    );
    const h = harness({ tools: [held], signal: stop.signal });
    await expect(h.run()).rejects.toThrow();
    expect(aborted).toBe(true);
    expect(h.requests()).toHaveLength(1);
    expect(h.log.map((e) => e.type)).toEqual(['model.replied', 'tool.started']);
  });
});

describe('a graph of the team\'s own (langGraphGraph)', () => {
  const graphOf = (runs: string[]) =>
    new StateGraph(MessagesAnnotation)
      .addNode('answer', async (state) => {
        runs.push('answer');
        return { messages: [await chatModel().invoke(state.messages)] };
      })
      .addEdge('__start__', 'answer')
      .compile();
  const run = (definition: ReturnType<typeof langGraphGraph>, turn: TurnState, log: DomainEvent[]) =>
    definition.loop!({
      conversation: 'c',
      agent: agentLimits,
      model: { reply: () => Promise.reject(new Error('unused')) },
      history: () => ({ summary: null, earlier: [] }),
      turn,
      commit: async (events) => {
        log.push(...events);
        return { turn: events.reduce(evolveTurn, turn), ended: events.some((e) => e.type === 'turn.ended') };
      },
      now: () => new Date(),
      signal: new AbortController().signal,
    });
  const prompt = { id: 'in-1', text: 'hello', messages: ['hello'], subject: 'alice' };

  it('takes no steers (steering.maxTaken 0: each is answered landed false, a turn of its own), and its run is one stored reply and the turn end', async () => {
    const runs: string[] = [];
    const definition = langGraphGraph({ name: 'graph', graph: graphOf(runs) });
    expect(definition.steering).toEqual({ maxTaken: 0 });
    const log: DomainEvent[] = [];
    const ended = await run(definition, startTurn('t1', prompt), log);
    expect(runs).toEqual(['answer']);
    expect(ended.answers).toEqual(['answer to hello']);
    expect(log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
    expect(log[0]).toMatchObject({ data: { usage: { totalTokens: expect.any(Number) } } });

    // Resumed after its reply was stored: the graph does not run again.
    const again: string[] = [];
    const resumedLog: DomainEvent[] = [];
    await run(langGraphGraph({ name: 'graph', graph: graphOf(again) }), evolveTurn(startTurn('t1', prompt), log[0]), resumedLog);
    expect(again).toEqual([]);
    expect(resumedLog.map((e) => e.type)).toEqual(['turn.ended']);
  });
});
