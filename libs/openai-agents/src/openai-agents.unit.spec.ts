import { Agent, OpenAIChatCompletionsModel, RunHandoffOutputItem, handoff, tool, type InputGuardrail } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextBudget, evolveTurn, startTurn, type Agent as RudderAgent, type ModelMessage, type TurnState } from '@rudder/agent';
import { memoryTurn } from '@rudder/agent/testing';
import type { DomainEvent } from '@rudder/contracts';
import { lastMessage, lastUserText, messageText, reply, startScriptedModel, toolResults, toolSequenceProblem, userTexts, type ModelRequest, type ScriptedModel, type ScriptedReply } from '@rudder/scripted-model';
import { openAiAgentsLoop } from './openai-agents-agent';

/**
 * The adapter against the real framework (`@openai/agents`, its Chat Completions model over
 * HTTP to the scripted model) and a store that takes steers as the conversation's decider does:
 * at the commit that closes a step, or in place of a completed end (then the turn takes one more step).
 */
let server: ScriptedModel;
let script: (request: ModelRequest) => ScriptedReply = () => reply.text('ok');
beforeAll(async () => {
  server = await startScriptedModel({ script: (request) => script(request) });
});
afterAll(() => server.stop());

const rudderAgent: RudderAgent = { systemPrompt: '', tools: [], maxSteps: 8, context: contextBudget({ maxTokens: 100_000 }), todos: false };
const prompt = { id: 'in-1', text: 'find a hotel in Lisbon', messages: ['find a hotel in Lisbon'], subject: 'alice' };
const model = () => new OpenAIChatCompletionsModel(new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 }), 'scripted-model');

/** The framework's tools as its users write them, each run logged. */
function tripTools() {
  const runs: string[] = [];
  const searchHotels = tool({
    name: 'search_hotels',
    description: 'Hotels in a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }, _context, details) => {
      runs.push(`search_hotels ${details?.toolCall?.callId} ${city}`);
      return `lis-2: Alfama Rooms in ${city}`;
    },
  });
  const bookHotel = tool({
    name: 'book_hotel',
    description: 'Books a hotel',
    parameters: z.object({ hotelId: z.string() }),
    needsApproval: true,
    execute: async ({ hotelId }, _context, details) => {
      runs.push(`book_hotel ${details?.toolCall?.callId} ${hotelId}`);
      return `booked ${hotelId}`;
    },
  });
  return { runs, searchHotels, bookHotel };
}

function harness(agent: Agent<any, any>, options: { steers?: { id: string; text: string }[]; turn?: TurnState; signal?: AbortSignal; earlier?: ModelMessage[] } = {}) {
  const memory = memoryTurn({ turn: options.turn ?? startTurn('t1', prompt), steers: options.steers, signal: options.signal, agent: rudderAgent, earlier: options.earlier ? [options.earlier] : [] });
  const requestsBefore = server.requests.length;
  // Each run from the turn as stored then (a run after a decision reads the decision).
  const run = () => openAiAgentsLoop({ agent })({ ...memory.options, turn: memory.turn() });
  /** How the turn ended, as stored: null while it has not. */
  const ending = () => {
    const ended = memory.log.find((e) => e.type === 'turn.ended');
    return ended?.type === 'turn.ended' ? ended.data.status : null;
  };
  return { log: memory.log, tokens: memory.tokens, run, ending, turn: memory.turn, requests: () => server.requests.slice(requestsBefore) };
}

const messagesOf = (request: ModelRequest) => request.body.messages;
const wellFormed = (requests: ModelRequest[]) => requests.map((r) => toolSequenceProblem(messagesOf(r) as never) ?? 'ok');
/** A planner that searches for a hotel in the first request, and answers from the results after. */
const searchThenAnswer = (request: ModelRequest): ScriptedReply =>
  lastMessage(request)?.role === 'tool' || lastMessage(request)?.role === 'user' && toolResults(request).length > 0
    ? reply.text(`found (asked: ${userTexts(request).join(' / ')})`)
    : userTexts(request).length > 1
      ? reply.text(`answered: ${lastUserText(request)}`)
      : reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }], { content: 'Let me look.' });

describe('an OpenAI Agents SDK agent through the adapter', () => {
  it("a steer taken during a tool call is in the very next request once, after the call's result, as the framework's own user message", async () => {
    script = searchThenAnswer;
    const { runs, searchHotels } = tripTools();
    const h = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [searchHotels] }), { steers: [{ id: 's1', text: 'only under 100 EUR' }] });
    const ended = await h.run();
    const [first, next] = h.requests();
    expect(h.requests()).toHaveLength(2);
    expect(messagesOf(first).map((m) => m.role)).toEqual(['system', 'user']);
    // The framework's Chat Completions model sends a reply's text and its calls as two assistant messages.
    expect(messagesOf(next).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'assistant', 'tool', 'user']);
    expect(messagesOf(next).slice(-2)).toMatchObject([{ role: 'tool', content: 'lis-2: Alfama Rooms in Lisbon' }, { role: 'user', content: 'only under 100 EUR' }]);
    expect(runs).toHaveLength(1);
    expect(h.ending()).toBe('completed');
    expect(ended.steered).toEqual([{ id: 's1', text: 'only under 100 EUR' }]);
    expect(ended.answers.at(-1)).toBe('found (asked: find a hotel in Lisbon / only under 100 EUR)');
    expect(h.log.filter((e) => e.type === 'model.replied').map((e) => e.type === 'model.replied' && e.data.usage?.totalTokens)).toEqual([expect.any(Number), expect.any(Number)]);
    expect(h.tokens.join('')).toContain('found');
  });

  it('a steer that lands with the final answer takes one more step, answered from the turn so far', async () => {
    script = (request) => reply.text(`answer to ${lastUserText(request)}`);
    const h = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model() }), { steers: [{ id: 's1', text: 'in Celsius' }] });
    const ended = await h.run();
    expect(h.requests()).toHaveLength(2);
    expect(messagesOf(h.requests()[1]).slice(1).map((m) => [m.role, messageText(m)])).toEqual([
      ['user', 'find a hotel in Lisbon'],
      ['assistant', 'answer to find a hotel in Lisbon'],
      ['user', 'in Celsius'],
    ]);
    expect(h.ending()).toBe('completed');
    expect(ended.answers).toEqual(['answer to find a hotel in Lisbon', 'answer to in Celsius']);
  });

  it('a run resumed from the stored turn asks no stored reply again, reruns no stored tool, and the framework sees the same call ids', async () => {
    script = searchThenAnswer;
    const first = tripTools();
    const h = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [first.searchHotels] }), { steers: [{ id: 's1', text: 'only under 100 EUR' }] });
    await h.run();
    // The worker died right after the step that took the steer.
    const upToSteer = h.log.slice(0, h.log.findIndex((e) => e.type === 'steer.taken') + 1);
    const again = tripTools();
    const resumed = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [again.searchHotels] }), {
      turn: upToSteer.reduce(evolveTurn, startTurn('t1', prompt)),
    });
    const ended = await resumed.run();
    expect(again.runs).toEqual([]);
    expect(resumed.requests()).toHaveLength(1);
    const callId = first.runs[0].split(' ')[1];
    expect(messagesOf(resumed.requests()[0]).slice(3)).toMatchObject([
      { role: 'assistant', tool_calls: [{ id: callId, function: { name: 'search_hotels' } }] },
      { role: 'tool', tool_call_id: callId },
      { role: 'user', content: 'only under 100 EUR' },
    ]);
    expect(resumed.log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
    expect(ended.answers.at(-1)).toBe('found (asked: find a hotel in Lisbon / only under 100 EUR)');
  });

  describe("a tool that needs approval (the framework's own needsApproval)", () => {
    const bookScript = (request: ModelRequest): ScriptedReply =>
      lastMessage(request)?.role === 'tool' ? reply.text(`done: ${toolResults(request)[0].content}`) : reply.tools([{ name: 'book_hotel', arguments: { hotelId: 'lis-1' } }]);
    const decided = (parked: TurnState, decision: 'approve' | 'deny', args: string | null): DomainEvent => {
      const { approval } = parked.approvals[parked.openCalls[0].id];
      return {
        type: 'approval.decided',
        data: { turn: 't1', step: 0, approval, callId: parked.openCalls[0].id, tool: 'book_hotel', decision, arguments: args, reason: decision === 'deny' ? 'too dear' : null, subject: 'alice', input: null },
      };
    };

    it('parks the turn without the framework interrupting, and the run after an approval with edited arguments runs it once with them', async () => {
      script = bookScript;
      const tools = tripTools();
      const agent = new Agent({ name: 'planner', instructions: 'You book.', model: model(), tools: [tools.bookHotel] });
      const h = harness(agent);
      const parked = await h.run();
      expect(h.ending()).toBeNull();
      expect(Object.values(parked.approvals)).toMatchObject([{ status: 'awaiting' }]);
      expect(h.log.find((e) => e.type === 'approval.requested')).toMatchObject({ data: { call: { name: 'book_hotel', arguments: '{"hotelId":"lis-1"}' } } });
      expect(tools.runs).toEqual([]);
      const resumed = harness(agent, { turn: evolveTurn(parked, decided(parked, 'approve', '{"hotelId":"lis-2"}')) });
      const ended = await resumed.run();
      expect(tools.runs).toEqual([`book_hotel ${parked.openCalls[0].id} lis-2`]);
      expect(resumed.requests()).toHaveLength(1);
      expect(resumed.ending()).toBe('completed');
      expect(ended.answers.at(-1)).toContain('booked lis-2');
    });

    it('denied, it never runs and the model reads the denial', async () => {
      script = bookScript;
      const tools = tripTools();
      const agent = new Agent({ name: 'planner', instructions: 'You book.', model: model(), tools: [tools.bookHotel] });
      const parked = await harness(agent).run();
      const resumed = harness(agent, { turn: evolveTurn(parked, decided(parked, 'deny', null)) });
      const ended = await resumed.run();
      expect(tools.runs).toEqual([]);
      expect(ended.answers.at(-1)).toBe('done: denied by the user: too dear');
    });
  });

  it("an agent used as a tool gets none of the turn's steered messages and stores none of its items as the turn's steps", async () => {
    script = (request) => {
      const system = messagesOf(request)[0];
      if (system.role === 'system' && String(system.content).includes('You research')) {
        return lastMessage(request)?.role === 'tool' ? reply.text('Alfama is quiet') : reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]);
      }
      return lastMessage(request)?.role === 'user' && toolResults(request).length > 0
        ? reply.text(`planned with ${toolResults(request)[0].content}`)
        : lastMessage(request)?.role === 'tool'
          ? reply.text('planned')
          : reply.tools([{ name: 'research', arguments: { input: 'Lisbon quarters' } }]);
    };
    const tools = tripTools();
    const researcher = new Agent({ name: 'researcher', instructions: 'You research.', model: model(), tools: [tools.searchHotels] });
    const planner = new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [researcher.asTool({ toolName: 'research', toolDescription: 'Researches a city' })] });
    const h = harness(planner, { steers: [{ id: 's1', text: 'only under 100 EUR' }] });
    const ended = await h.run();
    const nested = h.requests().filter((r) => String(messagesOf(r)[0].content).includes('You research'));
    expect(nested).toHaveLength(2);
    expect(nested.flatMap(userTexts)).not.toContain('only under 100 EUR');
    expect(h.log.filter((e) => e.type === 'model.replied')).toHaveLength(2);
    expect(h.log.filter((e) => e.type === 'tool.ended').map((e) => e.type === 'tool.ended' && [e.data.name, e.data.result])).toEqual([['research', 'Alfama is quiet']]);
    expect(h.ending()).toBe('completed');
    expect(ended.steered).toMatchObject([{ id: 's1' }]);
    expect(ended.answers.at(-1)).toBe('planned with Alfama is quiet');
  });

  it("a nested agent's tool that needs approval fails the turn with the reason: the framework's own interruption is not Rudder's to park", async () => {
    script = (request) => {
      const nested = String(messagesOf(request)[0].content).includes('You book');
      if (nested) return reply.tools([{ name: 'book_hotel', arguments: { hotelId: 'lis-1' } }]);
      return lastMessage(request)?.role === 'tool' ? reply.text('done') : reply.tools([{ name: 'booking_desk', arguments: { input: 'book lis-1' } }]);
    };
    const tools = tripTools();
    const desk = new Agent({ name: 'desk', instructions: 'You book.', model: model(), tools: [tools.bookHotel] });
    const h = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [desk.asTool({ toolName: 'booking_desk', toolDescription: 'Books' })] }));
    await h.run();
    expect(tools.runs).toEqual([]);
    expect(h.ending()).toBe('failed');
    expect(h.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { outcome: expect.stringContaining('asked for approval, which Rudder cannot park: book_hotel') } });
  });

  it("a handoff keeps the steered messages in place in the new agent's requests", async () => {
    script = (request) => {
      const system = String(messagesOf(request)[0].content);
      if (system.includes('You book')) return reply.text(`booking desk: ${userTexts(request).join(' / ')}`);
      return lastMessage(request)?.role === 'user' && toolResults(request).length > 0
        ? reply.tools([{ name: 'transfer_to_booker', arguments: {} }])
        : reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]);
    };
    const tools = tripTools();
    const booker = new Agent({ name: 'booker', instructions: 'You book.', model: model() });
    const planner = new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [tools.searchHotels], handoffs: [booker] });
    const h = harness(planner, { steers: [{ id: 's1', text: 'only under 100 EUR' }] });
    const ended = await h.run();
    const [, afterSteer, handedOff] = h.requests();
    expect(h.requests()).toHaveLength(3);
    for (const request of [afterSteer, handedOff]) {
      const messages = messagesOf(request);
      const at = messages.findIndex((m) => m.role === 'user' && m.content === 'only under 100 EUR');
      expect(messages[at - 1]).toMatchObject({ role: 'tool', content: 'lis-2: Alfama Rooms in Lisbon' });
      expect(userTexts(request).filter((t) => t === 'only under 100 EUR')).toHaveLength(1);
    }
    expect(String(messagesOf(handedOff)[0].content)).toContain('You book');
    expect(ended.answers.at(-1)).toBe('booking desk: find a hotel in Lisbon / only under 100 EUR');
  });

  it("a handoff whose inputFilter drops the outputs, its own among them, never sends a tool call without its output in any later request", async () => {
    script = (request) =>
      String(messagesOf(request)[0].content).includes('You book')
        ? lastMessage(request)?.role === 'tool'
          ? reply.text('booking desk here')
          : reply.tools([{ name: 'search_hotels', arguments: { city: 'Porto' } }])
        : reply.tools([{ name: 'transfer_to_booker', arguments: {} }]);
    const tools = tripTools();
    const booker = new Agent({ name: 'booker', instructions: 'You book.', model: model(), tools: [tools.searchHotels] });
    // Drops every tool output it is given (the conversation's earlier ones, and the handoff's own) and keeps the calls.
    const dropOutputs = handoff(booker, {
      inputFilter: (data) => ({
        ...data,
        inputHistory: typeof data.inputHistory === 'string' ? data.inputHistory : data.inputHistory.filter((i) => i.type !== 'function_call_result'),
        newItems: data.newItems.filter((i) => !(i instanceof RunHandoffOutputItem)),
      }),
    });
    const earlier: ModelMessage[] = [
      { role: 'user', content: 'hotels in Faro?' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'old-1', type: 'function', function: { name: 'search_hotels', arguments: '{"city":"Faro"}' } }] },
      { role: 'tool', tool_call_id: 'old-1', content: 'faro-1: Casa Azul' },
      { role: 'assistant', content: 'Casa Azul in Faro.' },
    ];
    const h = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [tools.searchHotels], handoffs: [dropOutputs] }), { earlier });
    const ended = await h.run();
    expect(h.requests()).toHaveLength(3);
    expect(wellFormed(h.requests())).toEqual(['ok', 'ok', 'ok']);
    expect(messagesOf(h.requests()[1]).filter((m) => m.role === 'tool').map((m) => m.role === 'tool' && m.tool_call_id)).toEqual(['old-1']);
    expect(h.ending()).toBe('completed');
    expect(ended.answers).toEqual(['booking desk here']);
    const handoffResult = h.log.find((e) => e.type === 'tool.ended');
    expect(handoffResult).toMatchObject({ data: { name: 'transfer_to_booker', result: '{"assistant":"booker"}', isError: false } });
  });

  it('an input guardrail is not run again for a steered message, a continuation or a resumed run', async () => {
    const judged: string[] = [];
    const guardrail: InputGuardrail = {
      name: 'no cards',
      execute: async ({ input }) => {
        judged.push(JSON.stringify(input));
        return { tripwireTriggered: false, outputInfo: null };
      },
    };
    script = (request) => reply.text(`answer to ${lastUserText(request)}`);
    const agent = new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), inputGuardrails: [guardrail] });
    const h = harness(agent, { steers: [{ id: 's1', text: 'in Celsius' }] });
    const ended = await h.run();
    expect(ended.answers).toHaveLength(2);
    expect(judged).toHaveLength(1);
    expect(judged[0]).not.toContain('in Celsius');
    const upToSteer = h.log.slice(0, h.log.findIndex((e) => e.type === 'steer.taken') + 1);
    await harness(agent, { turn: upToSteer.reduce(evolveTurn, startTurn('t1', prompt)) }).run();
    expect(judged).toHaveLength(1);
  });

  it("a stop aborts the framework's run and the tool it holds", async () => {
    script = searchThenAnswer;
    const stop = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const held = tool({
      name: 'search_hotels',
      description: 'Hotels in a city',
      parameters: z.object({ city: z.string() }),
      execute: async (_args, _context, details) => {
        toolSignal = details?.signal;
        const aborted = new Promise<string>((_, reject) => details?.signal?.addEventListener('abort', () => reject(new Error('aborted'))));
        stop.abort(new Error('stopped'));
        return aborted;
      },
    });
    const h = harness(new Agent({ name: 'planner', instructions: 'You plan trips.', model: model(), tools: [held] }), { signal: stop.signal });
    await expect(h.run()).rejects.toThrow();
    expect(toolSignal?.aborted).toBe(true);
    expect(h.log.filter((e) => e.type === 'tool.ended')).toEqual([]);
    expect(h.requests()).toHaveLength(1);
  });
});
