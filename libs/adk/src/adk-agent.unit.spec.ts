import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentTool, BaseLlm, FunctionTool, LlmAgent, Workflow, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';
import { z } from 'zod';
import { contextBudget, evolveTurn, startTurn, type Agent, type ModelMessage, type TurnState } from '@rudder/agent';
import { memoryTurn } from '@rudder/agent/testing';
import type { DomainEvent } from '@rudder/contracts';
import { lastUserText, messageText, reply, startScriptedModel, toolResults, userTexts, type ModelRequest, type ScriptedModel, type ScriptedReply } from '@rudder/scripted-model';
import { adkLoop } from './adk-agent';
import { ChatCompletionsLlm } from './chat-completions-llm';

/**
 * The ADK adapter against real ADK agents and the scripted model over HTTP, with a store that
 * takes steers as the conversation's decider does (at the commit that closes a step, or in
 * place of a completed end), as durable-turn.unit.spec.ts's.
 */
const rudderAgent: Agent = { systemPrompt: '', tools: [], maxSteps: 8, context: contextBudget({ maxTokens: 100_000 }), todos: false };
const prompt = { id: 'in-1', text: 'a hotel in Lisbon', messages: ['a hotel in Lisbon'], subject: 'alice' };

let server: ScriptedModel;
let script: (request: ModelRequest) => ScriptedReply;
beforeAll(async () => {
  server = await startScriptedModel({ script: (request) => script(request) });
});
afterAll(() => server.stop());

/** The team's model: ADK's requests it is asked (as ADK `Content`s), then the Chat Completions model. */
class Recording extends BaseLlm {
  readonly requests: LlmRequest[] = [];
  private readonly chat = new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' });
  constructor() {
    super({ model: 'scripted' });
  }
  async *generateContentAsync(request: LlmRequest, stream?: boolean, signal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    this.requests.push(structuredClone({ contents: request.contents }) as LlmRequest);
    yield* this.chat.generateContentAsync(request, stream, signal);
  }
  connect(): Promise<BaseLlmConnection> {
    return this.chat.connect();
  }
}

function tripAgent(options: { runs: string[]; model?: BaseLlm; tools?: LlmAgent['tools']; subAgents?: LlmAgent[] }) {
  const searchHotels = new FunctionTool({
    name: 'search_hotels',
    description: 'Hotels in a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      options.runs.push(`search_hotels ${city}`);
      return { hotels: [{ id: 'lis-1', city }] };
    },
  });
  const bookHotel = new FunctionTool({
    name: 'book_hotel',
    description: 'Books a hotel',
    parameters: z.object({ hotelId: z.string() }),
    requireConfirmation: true,
    execute: async ({ hotelId }) => {
      options.runs.push(`book_hotel ${hotelId}`);
      return `booked ${hotelId}`;
    },
  });
  return new LlmAgent({
    name: 'planner',
    instruction: 'You plan trips.',
    model: options.model ?? new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' }),
    tools: options.tools ?? [searchHotels, bookHotel],
    subAgents: options.subAgents,
  });
}

function harness(agent: LlmAgent, options: { steers?: { id: string; text: string }[]; turn?: TurnState; signal?: AbortSignal; earlier?: ModelMessage[] } = {}) {
  const memory = memoryTurn({ turn: options.turn ?? startTurn('t1', prompt), steers: options.steers, signal: options.signal, agent: rudderAgent, earlier: options.earlier ? [options.earlier] : [] });
  const run = adkLoop(agent)(memory.options);
  return { log: memory.log, tokens: memory.tokens, run };
}

const types = (log: DomainEvent[]) => log.map((e) => e.type);
const system = (r: ModelRequest) => messageText(r.body.messages[0]);

describe('an ADK agent run through the adapter', () => {
  it("a steer taken during a tool call is in the very next request once, after the function responses, as ADK's own user Content", async () => {
    const requestsBefore = server.requests.length;
    script = (r) => (toolResults(r).length > 0 ? reply.text(`found for: ${userTexts(r).join(' / ')}`) : reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]));
    const runs: string[] = [];
    const model = new Recording();
    const h = harness(tripAgent({ runs, model }), { steers: [{ id: 's1', text: 'under 100 a night' }] });
    const ended = await h.run;

    const wire = server.requests.slice(requestsBefore);
    expect(wire).toHaveLength(2);
    expect(wire[1].body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(lastUserText(wire[1])).toBe('under 100 a night');
    expect(userTexts(wire[1]).filter((t) => t === 'under 100 a night')).toHaveLength(1);
    // In ADK's own request: a user Content right after the Content of function responses.
    const contents = model.requests[1].contents;
    expect(contents.at(-2)?.parts?.[0].functionResponse?.name).toBe('search_hotels');
    expect(contents.at(-1)).toEqual({ role: 'user', parts: [{ text: 'under 100 a night' }] });
    expect(runs).toEqual(['search_hotels Lisbon']);
    expect(h.log.filter((e) => e.type === 'steer.taken')).toHaveLength(1);
    expect(ended.answers).toEqual(['found for: a hotel in Lisbon / under 100 a night']);
    expect(h.tokens.join('')).toBe('found for: a hotel in Lisbon / under 100 a night');
  });

  it("earlier turns, their tool calls and results too, are ADK's session: the model is asked with them in order", async () => {
    const requestsBefore = server.requests.length;
    script = () => reply.text('again?');
    const earlier: ModelMessage[] = [
      { role: 'user', content: 'hotels in Porto' },
      { role: 'assistant', content: 'Looking.', tool_calls: [{ id: 'old_1', type: 'function', function: { name: 'search_hotels', arguments: '{"city":"Porto"}' } }] },
      { role: 'tool', tool_call_id: 'old_1', content: 'por-1: Ribeira Inn' },
      { role: 'assistant', content: 'Ribeira Inn.' },
    ];
    await harness(tripAgent({ runs: [] }), { earlier }).run;
    expect(server.requests.slice(requestsBefore)[0].body.messages.slice(1)).toEqual([...earlier, { role: 'user', content: 'a hotel in Lisbon' }]);
  });

  it('a steer that lands with the final answer takes one more step, from the turn so far', async () => {
    const requestsBefore = server.requests.length;
    script = (r) => reply.text(`answer to ${r.body.messages.length} messages`);
    const h = harness(tripAgent({ runs: [] }), { steers: [{ id: 's1', text: 'in Porto instead' }] });
    const ended = await h.run;
    const wire = server.requests.slice(requestsBefore);
    expect(wire).toHaveLength(2);
    expect(wire[1].body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'answer to 2 messages' },
      { role: 'user', content: 'in Porto instead' },
    ]);
    expect(ended.answers).toEqual(['answer to 2 messages', 'answer to 4 messages']);
    expect(h.log.filter((e) => e.type === 'turn.ended')).toHaveLength(1);
  });

  it('a run resumed from the stored turn asks no stored reply again, reruns no stored tool, and ADK sees the same call ids', async () => {
    script = (r) => (toolResults(r).length > 0 ? reply.text('Casa do Rio') : reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]));
    const firstRuns: string[] = [];
    const first = harness(tripAgent({ runs: firstRuns }), { steers: [{ id: 's1', text: 'with a view' }] });
    await first.run;
    const upToSteer = first.log.slice(0, first.log.findIndex((e) => e.type === 'steer.taken') + 1);
    const callId = upToSteer.flatMap((e) => (e.type === 'model.replied' ? e.data.toolCalls.map((c) => c.id) : []))[0];

    const requestsBefore = server.requests.length;
    const runs: string[] = [];
    const model = new Recording();
    const resumed = harness(tripAgent({ runs, model }), { turn: upToSteer.reduce(evolveTurn, startTurn('t1', prompt)) });
    const ended = await resumed.run;
    expect(runs).toEqual([]);
    expect(server.requests.length - requestsBefore).toBe(1);
    const contents = model.requests[0].contents;
    expect(contents.flatMap((c) => c.parts ?? []).flatMap((p) => [p.functionCall?.id, p.functionResponse?.id]).filter(Boolean)).toEqual([callId, callId]);
    expect(userTexts(server.requests.at(-1)!).filter((t) => t === 'with a view')).toHaveLength(1);
    expect(types(resumed.log)).toEqual(['model.replied', 'turn.ended']);
    expect(ended.answers).toEqual(['Casa do Rio']);
  });

  for (const decision of ['approve', 'deny'] as const) {
    it(`a call whose FunctionTool requires confirmation parks as Rudder's approval, and the run after the decision (${decision}) runs it once or never`, async () => {
      script = (r) => (toolResults(r).length > 0 ? reply.text(`done: ${toolResults(r)[0].content as string}`) : reply.tools([{ name: 'book_hotel', arguments: { hotelId: 'lis-1' } }]));
      const runs: string[] = [];
      const first = harness(tripAgent({ runs }));
      const parked = await first.run;
      expect(runs).toEqual([]);
      const requested = first.log.find((e) => e.type === 'approval.requested');
      if (requested?.type !== 'approval.requested') throw new Error('no approval requested');
      expect(parked.approvals[requested.data.call.id]).toMatchObject({ status: 'awaiting' });
      expect(types(first.log)).not.toContain('turn.ended');

      const decided: DomainEvent = {
        type: 'approval.decided',
        data: { turn: 't1', step: 0, approval: requested.data.approval, callId: requested.data.call.id, tool: 'book_hotel', decision, arguments: decision === 'approve' ? '{"hotelId":"lis-2"}' : null, reason: decision === 'deny' ? 'too pricey' : null, subject: 'alice', input: null },
      };
      const requestsBefore = server.requests.length;
      const resumed = harness(tripAgent({ runs }), { turn: evolveTurn(parked, decided) });
      const ended = await resumed.run;
      expect(server.requests.length - requestsBefore).toBe(1);
      if (decision === 'approve') {
        expect(runs).toEqual(['book_hotel lis-2']);
        expect(ended.answers).toEqual([expect.stringMatching(/^done: .*booked lis-2$/s)]);
      } else {
        expect(runs).toEqual([]);
        expect(ended.answers).toEqual(['done: denied by the user: too pricey']);
      }
    });
  }

  it('a reply that calls a tool needing approval and another runs the other, stores its result, then parks; the run after the decision reruns nothing stored', async () => {
    script = (r) =>
      toolResults(r).length > 0
        ? reply.text(`done: ${toolResults(r).length} results`)
        : reply.tools([
            { name: 'book_hotel', arguments: { hotelId: 'lis-1' } },
            { name: 'search_hotels', arguments: { city: 'Lisbon' } },
          ]);
    const runs: string[] = [];
    const first = harness(tripAgent({ runs }));
    const parked = await first.run;
    expect(runs).toEqual(['search_hotels Lisbon']);
    expect(types(first.log)).toEqual(['model.replied', 'tool.started', 'tool.started', 'approval.requested', 'tool.ended']);
    const requested = first.log.find((e) => e.type === 'approval.requested');
    if (requested?.type !== 'approval.requested') throw new Error('no approval requested');
    const decided: DomainEvent = {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval: requested.data.approval, callId: requested.data.call.id, tool: 'book_hotel', decision: 'approve', arguments: null, reason: null, subject: 'alice', input: null },
    };
    const resumed = harness(tripAgent({ runs }), { turn: evolveTurn(parked, decided) });
    const ended = await resumed.run;
    expect(runs).toEqual(['search_hotels Lisbon', 'book_hotel lis-1']);
    expect(ended.answers).toEqual(['done: 2 results']);
  });

  it('an agent used as a tool (AgentTool) gets no steer and stores nothing as the turn’s steps', async () => {
    const requestsBefore = server.requests.length;
    script = (r) => {
      if (system(r).includes('You check the weather.')) return reply.text('sunny');
      if (toolResults(r).length > 0) return reply.text(`weather: ${toolResults(r)[0].content as string}`);
      return reply.tools([{ name: 'weather', arguments: { request: 'Lisbon' } }]);
    };
    const weather = new LlmAgent({ name: 'weather', description: 'The weather', instruction: 'You check the weather.', model: new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' }) });
    const h = harness(tripAgent({ runs: [], tools: [new AgentTool({ agent: weather })] }), { steers: [{ id: 's1', text: 'and tomorrow?' }] });
    const ended = await h.run;
    const wire = server.requests.slice(requestsBefore);
    const nested = wire.filter((r) => system(r).includes('You check the weather.'));
    expect(nested).toHaveLength(1);
    expect(userTexts(nested[0])).toEqual(['Lisbon']);
    expect(h.log.filter((e) => e.type === 'model.replied')).toHaveLength(2);
    expect(h.log.filter((e) => e.type === 'tool.ended').map((e) => e.type === 'tool.ended' && e.data.result)).toEqual(['sunny']);
    expect(lastUserText(wire.at(-1)!)).toBe('and tomorrow?');
    expect(ended.answers).toEqual(['weather: sunny']);
  });

  it('a workflow used as a tool (a sub-graph) gets no steer and stores nothing as the turn’s steps', async () => {
    const requestsBefore = server.requests.length;
    script = (r) => {
      if (system(r).includes('You pick a district.')) return reply.text('Alfama');
      if (toolResults(r).length > 0) return reply.text(`district: ${toolResults(r)[0].content as string}`);
      return reply.tools([{ name: 'districts', arguments: { request: 'Lisbon' } }]);
    };
    const picker = new LlmAgent({ name: 'picker', instruction: 'You pick a district.', model: new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' }) });
    const districts = new Workflow({ name: 'districts', description: 'Picks a district', inputSchema: z.object({ request: z.string() }), edges: [['START', picker]] });
    const h = harness(tripAgent({ runs: [], tools: [districts] }), { steers: [{ id: 's1', text: 'near the river' }] });
    const ended = await h.run;
    const wire = server.requests.slice(requestsBefore);
    const nested = wire.filter((r) => system(r).includes('You pick a district.'));
    expect(nested).toHaveLength(1);
    expect(userTexts(nested[0])).not.toContain('near the river');
    expect(h.log.filter((e) => e.type === 'model.replied')).toHaveLength(2);
    expect(lastUserText(wire.at(-1)!)).toBe('near the river');
    expect(ended.answers).toEqual([expect.stringContaining('district: ')]);
  });

  it("a sub-agent's model requests get no steer and are not the turn's steps; the steer is answered by the agent after it", async () => {
    const requestsBefore = server.requests.length;
    script = (r) => {
      if (system(r).includes('You book flights.')) return reply.text('flight booked');
      if (userTexts(r).includes('and a hotel')) return reply.text('hotel too');
      return reply.tools([{ name: 'transfer_to_agent', arguments: { agentName: 'flights' } }]);
    };
    const flights = new LlmAgent({ name: 'flights', description: 'Books flights', instruction: 'You book flights.', model: new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' }) });
    const h = harness(tripAgent({ runs: [], subAgents: [flights] }), { steers: [{ id: 's1', text: 'and a hotel' }] });
    const ended = await h.run;
    const wire = server.requests.slice(requestsBefore);
    const nested = wire.filter((r) => system(r).includes('You book flights.'));
    expect(nested).toHaveLength(1);
    expect(userTexts(nested[0])).not.toContain('and a hotel');
    expect(h.log.filter((e) => e.type === 'model.replied').map((e) => e.type === 'model.replied' && e.data.step)).toEqual([0, 1]);
    expect(ended.steered).toEqual([{ id: 's1', text: 'and a hotel' }]);
    expect(ended.answers).toEqual(['hotel too']);
  });

  it('a transfer to a sub-agent replayed from the log hands over to the sub-agent again, the agent not asked again', async () => {
    script = (r) => (system(r).includes('You book flights.') ? reply.text('flight booked') : reply.tools([{ name: 'transfer_to_agent', arguments: { agentName: 'flights' } }]));
    const subAgent = () => new LlmAgent({ name: 'flights', description: 'Books flights', instruction: 'You book flights.', model: new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' }) });
    const first = harness(tripAgent({ runs: [], subAgents: [subAgent()] }));
    await first.run;
    const upToTransfer = first.log.slice(0, first.log.findIndex((e) => e.type === 'tool.ended') + 1);
    const requestsBefore = server.requests.length;
    const resumed = harness(tripAgent({ runs: [], subAgents: [subAgent()] }), { turn: upToTransfer.reduce(evolveTurn, startTurn('t1', prompt)) });
    await resumed.run;
    const wire = server.requests.slice(requestsBefore);
    expect(wire.map((r) => system(r).includes('You book flights.'))).toEqual([true]);
    expect(types(resumed.log)).toEqual(['turn.ended']);
  });

  it('a tool that throws is stored as an error result, and ADK gives the model its error as it does', async () => {
    const requestsBefore = server.requests.length;
    script = (r) => (toolResults(r).length > 0 ? reply.text(`sorry: ${toolResults(r)[0].content as string}`) : reply.tools([{ name: 'search_hotels', arguments: { city: 'Atlantis' } }]));
    const failing = new FunctionTool({
      name: 'search_hotels',
      description: 'Hotels in a city',
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => Promise.reject(new Error(`no city ${city}`)),
    });
    const h = harness(tripAgent({ runs: [], tools: [failing] }));
    const ended = await h.run;
    expect(h.log.find((e) => e.type === 'tool.ended')).toMatchObject({ data: { isError: true, result: "Error in tool 'search_hotels': no city Atlantis" } });
    expect(toolResults(server.requests.slice(requestsBefore)[1])[0].content).toBe('{"error":"Error in tool \'search_hotels\': no city Atlantis"}');
    expect(ended.answers).toHaveLength(1);
  });

  it('a model request that fails ends the turn failed, nothing of it stored as a step', async () => {
    script = () => reply.error(500, 'the model is down');
    const h = harness(tripAgent({ runs: [], model: new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted', maxRetries: 0 }) }));
    const ended = await h.run;
    expect(types(h.log)).toEqual(['turn.ended']);
    expect(h.log[0]).toMatchObject({ data: { status: 'failed', outcome: expect.stringContaining('the model is down') } });
    expect(ended.answers).toEqual([]);
  });

  it("a stop aborts ADK's run and its tool in flight; nothing more is stored", async () => {
    script = () => reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]);
    const stop = new AbortController();
    let aborted = false;
    const slow = new FunctionTool({
      name: 'search_hotels',
      description: 'Hotels in a city',
      parameters: z.object({ city: z.string() }),
      execute: (_args, context) =>
        new Promise((_resolve, reject) => {
          context?.abortSignal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
          setTimeout(() => stop.abort(new Error('stopped')), 50);
        }),
    });
    const h = harness(tripAgent({ runs: [], tools: [slow] }), { signal: stop.signal });
    await expect(h.run).rejects.toThrow('stopped');
    expect(aborted).toBe(true);
    expect(types(h.log)).toEqual(['model.replied', 'tool.started']);
  });
});
