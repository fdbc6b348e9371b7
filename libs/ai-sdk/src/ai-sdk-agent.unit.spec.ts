import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, tool, ToolLoopAgent } from 'ai';
import type { DomainEvent } from '@rudder/contracts';
import { logUpTo, memoryTurn, turnOf } from '@rudder/agent/testing';
import { evolveTurn } from '@rudder/agent';
import { lastMessage, reply, startScriptedModel, toolResults, userTexts, type ModelRequest, type ScriptedModel } from '@rudder/scripted-model';
import { aiSdkAgent } from './ai-sdk-agent';

// A team's AI SDK agent, unchanged, run by the adapter against the scripted model over HTTP
// (Chat Completions, streaming), its turn stored in memory as the worker's store would.
let server: ScriptedModel;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.stop());

const openai = () => createOpenAI({ baseURL: `${server.url}`, apiKey: 'test' });
/** What the test's tools did, in order. */
let ran: string[] = [];
let during: (() => void) | null = null;

const searchHotels = tool({
  description: 'Searches hotels in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    ran.push(`search ${city}`);
    during?.();
    return [{ id: 'lis-2', name: 'Alfama Rooms', city }];
  },
});
const bookHotel = tool({
  description: 'Books a hotel.',
  inputSchema: z.object({ hotelId: z.string() }),
  needsApproval: true,
  execute: async ({ hotelId }) => {
    ran.push(`book ${hotelId}`);
    return `booked ${hotelId}`;
  },
});

const trips = () => new ToolLoopAgent({ model: openai().chat('scripted'), instructions: 'You plan trips.', tools: { search_hotels: searchHotels, book_hotel: bookHotel }, stopWhen: stepCountIs(8) });

/** Runs one turn of `agent` through the adapter on `memory`, the scripted model answering by `script`. */
function runWith(agent: Parameters<typeof aiSdkAgent>[0]['agent'], memory: ReturnType<typeof memoryTurn>) {
  return aiSdkAgent({ name: 'trips', agent }).loop!(memory.options);
}

const searchThenAnswer = (request: ModelRequest) =>
  toolResults(request).length > 0 ? reply.text(`found: ${toolResults(request)[0].content} (asked: ${userTexts(request).join(' / ')})`) : reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]);

describe('an AI SDK agent behind Rudder', () => {
  it("a steer during a tool call is in the very next request once, right after the result, as the AI SDK's own user message", async () => {
    ran = [];
    server.setScript(searchThenAnswer);
    const memory = memoryTurn();
    during = () => memory.steers.push({ id: 's1', text: 'only under 100 EUR' });
    const before = server.requests.length;
    const ended = await runWith(trips(), memory);
    during = null;
    const [first, second] = server.requests.slice(before);
    expect(userTexts(first)).toEqual(['check the build']);
    expect(second.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(userTexts(second)).toEqual(['check the build', 'only under 100 EUR']);
    expect(ended).toMatchObject({ steered: [{ id: 's1', text: 'only under 100 EUR' }] });
    expect(memory.log.filter((e) => e.type === 'steer.taken')).toHaveLength(1);
    expect(memory.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed' } });
    expect(ended.answers.at(-1)).toMatch(/asked: check the build \/ only under 100 EUR/);
  });

  it('a steer that lands with the final answer takes one more step, its request holding the answer and then the steer', async () => {
    server.setScript((request) => reply.text(`answer to: ${userTexts(request).join(' / ')}`));
    const memory = memoryTurn({ steers: [{ id: 's1', text: 'in Celsius' }] });
    const before = server.requests.length;
    const ended = await runWith(trips(), memory);
    expect(server.requests.length - before).toBe(2);
    expect(server.requests[before + 1].body.messages.slice(-2)).toMatchObject([
      { role: 'assistant', content: 'answer to: check the build' },
      { role: 'user', content: 'in Celsius' },
    ]);
    expect(ended.answers).toEqual(['answer to: check the build', 'answer to: check the build / in Celsius']);
  });

  it('a run resumed after a crash asks no stored reply again, reruns no stored tool, and sends the same requests with the same call ids', async () => {
    ran = [];
    server.setScript(searchThenAnswer);
    const first = memoryTurn();
    during = () => first.steers.push({ id: 's1', text: 'only under 100 EUR' });
    const before = server.requests.length;
    await runWith(trips(), first);
    during = null;
    const original = server.requests.slice(before).map((r) => r.body.messages);
    // The worker died right after the commit that took the steer: another resumes from the log.
    const resumed = memoryTurn({ turn: turnOf(logUpTo(first.log, 'steer.taken')) });
    const again = server.requests.length;
    ran = [];
    const ended = await runWith(trips(), resumed);
    expect(ran).toEqual([]);
    expect(server.requests.length - again).toBe(1);
    expect(server.requests[again].body.messages).toEqual(original[1]);
    expect(resumed.log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
    expect(ended.steered).toEqual([{ id: 's1', text: 'only under 100 EUR' }]);
  });

  it("a tool's needsApproval parks the turn; the run after the decision runs it once, with the person's edited arguments", async () => {
    ran = [];
    server.setScript((request) => (lastMessage(request)?.role === 'tool' ? reply.text(`done: ${toolResults(request)[0].content}`) : reply.tools([{ name: 'book_hotel', arguments: { hotelId: 'lis-2' } }])));
    const memory = memoryTurn();
    const parked = await runWith(trips(), memory);
    expect(ran).toEqual([]);
    const requested = memory.log.find((e) => e.type === 'approval.requested');
    expect(requested).toBeDefined();
    expect(Object.values(parked.approvals)).toMatchObject([{ status: 'awaiting' }]);
    const callId = parked.openCalls[0].id;
    const decided: DomainEvent = {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval: requested!.type === 'approval.requested' ? requested!.data.approval : '', callId, tool: 'book_hotel', decision: 'approve', arguments: '{"hotelId":"lis-9"}', reason: null, subject: 'alice', input: null },
    };
    const resumed = memoryTurn({ turn: evolveTurn(parked, decided) });
    const ended = await runWith(trips(), resumed);
    expect(ran).toEqual(['book lis-9']);
    expect(ended.answers.at(-1)).toMatch(/done: run with arguments edited by the user: \{"hotelId":"lis-9"\}\s+booked lis-9/);
  });

  it('a denied call is answered with the denial, its tool never run', async () => {
    ran = [];
    server.setScript((request) => (lastMessage(request)?.role === 'tool' ? reply.text(`told: ${toolResults(request)[0].content}`) : reply.tools([{ name: 'book_hotel', arguments: { hotelId: 'lis-2' } }])));
    const memory = memoryTurn();
    const parked = await runWith(trips(), memory);
    const requested = memory.log.find((e) => e.type === 'approval.requested')!;
    const decided: DomainEvent = {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval: requested.type === 'approval.requested' ? requested.data.approval : '', callId: parked.openCalls[0].id, tool: 'book_hotel', decision: 'deny', arguments: null, reason: 'too dear', subject: 'alice', input: null },
    };
    const ended = await runWith(trips(), memoryTurn({ turn: evolveTurn(parked, decided) }));
    expect(ran).toEqual([]);
    expect(ended.answers.at(-1)).toBe('told: denied by the user: too dear');
  });

  it("a stop aborts the AI SDK's run and its tool, storing nothing more", async () => {
    server.setScript(() => reply.tools([{ name: 'slow', arguments: {} }]));
    const stop = new AbortController();
    let aborted = false;
    const slow = tool({
      description: 'Runs until aborted.',
      inputSchema: z.object({}),
      execute: (_, { abortSignal }) =>
        new Promise<string>((_resolve, reject) => {
          abortSignal!.addEventListener('abort', () => ((aborted = true), reject(abortSignal!.reason)), { once: true });
          stop.abort(new Error('stop requested'));
        }),
    });
    const memory = memoryTurn({ signal: stop.signal });
    await expect(runWith({ model: openai().chat('scripted'), tools: { slow } }, memory)).rejects.toThrow();
    expect(aborted).toBe(true);
    expect(memory.log.map((e) => e.type)).toEqual(['model.replied', 'tool.started']);
  });

  it('an agent run inside a tool (a nested generateText) gets no steer and stores nothing as the turn', async () => {
    server.setScript((request) => {
      if (userTexts(request).includes('summarise the reviews')) return reply.text(`reviews seen with ${userTexts(request).length} user message(s)`);
      return toolResults(request).length > 0 ? reply.text(`final: ${toolResults(request)[0].content}`) : reply.tools([{ name: 'reviews', arguments: {} }]);
    });
    const memory = memoryTurn();
    const model = openai().chat('scripted');
    const reviews = tool({
      description: 'Asks a reviewer agent.',
      inputSchema: z.object({}),
      execute: async () => {
        memory.steers.push({ id: 's1', text: 'only quiet ones' });
        return (await generateText({ model, prompt: 'summarise the reviews' })).text;
      },
    });
    const ended = await runWith({ model, tools: { reviews } }, memory);
    expect(memory.log.filter((e) => e.type === 'model.replied')).toHaveLength(2);
    expect(ended.answers.at(-1)).toBe('final: reviews seen with 1 user message(s)');
    expect(ended.steered).toEqual([{ id: 's1', text: 'only quiet ones' }]);
  });

  it("a request whose tool results the team's prepareStep trims away leaves out the steer taken after them: no request starts at a steered message", async () => {
    let asked = 0;
    server.setScript(() => (asked++ === 0 ? reply.tools([{ name: 'search_hotels', arguments: { city: 'Lisbon' } }]) : reply.text('done')));
    const memory = memoryTurn();
    during = () => memory.steers.push({ id: 's1', text: 'only under 100 EUR' });
    const before = server.requests.length;
    // Keeps only the person's messages: past the prompt, the steer would start what is left of the turn.
    const ended = await runWith({ model: openai().chat('scripted'), tools: { search_hotels: searchHotels }, prepareStep: ({ messages }) => ({ messages: messages.filter((m) => m.role === 'user') }) }, memory);
    during = null;
    const second = server.requests[before + 1].body.messages;
    expect(second).toEqual([{ role: 'user', content: 'check the build' }]);
    expect(ended.steered).toHaveLength(1);
  });

  it('a model that fails for good ends the turn failed, saying why, after the retries the AI SDK makes', async () => {
    server.setScript(() => reply.error(500, 'the model is down'));
    const before = server.requests.length;
    const memory = memoryTurn();
    const ended = await runWith({ model: openai().chat('scripted'), maxRetries: 1 }, memory);
    expect(server.requests.length - before).toBe(2);
    expect(memory.log.map((e) => e.type)).toEqual(['turn.ended']);
    expect(memory.log[0]).toMatchObject({ data: { status: 'failed', outcome: expect.stringContaining('the model is down') } });
    expect(ended.steps).toBe(0);
  });

  it("streams the reply's tokens to the turn and stores the model's usage", async () => {
    server.setScript(() => reply.text('a warm week in Lisbon'));
    const memory = memoryTurn();
    const tokens: string[] = [];
    memory.options.onToken = (_, text) => tokens.push(text);
    const ended = await runWith(trips(), memory);
    expect(tokens.join('')).toBe('a warm week in Lisbon');
    expect(tokens.length).toBeGreaterThan(1);
    expect(ended.usage?.totalTokens).toBeGreaterThan(0);
  });
});
