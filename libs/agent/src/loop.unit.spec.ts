import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { DomainEvent, ToolCall } from '@rudder/contracts';
import { demoScript, reply, startScriptedModel, toolResults, type ScriptedModel } from '@rudder/scripted-model';
import { contextBudget, SUMMARY_HEADING } from './context';
import { runTurn } from './loop';
import type { Agent, StoredTurn } from './run-options';
import { openAiModel, type ModelClient } from './model';
import { countRequest } from './tokens';
import { argumentsError, defineTool, waitTool } from './tools';
import { assistantMessage, userMessage, type ModelMessage } from './messages';
import { evolveTurn, startTurn, type TurnState } from './turn';

// The loop against the real `openai` client talking HTTP (streaming) to the scripted model.
let server: ScriptedModel;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.stop());

const agent: Agent = { systemPrompt: 'be brief', tools: [waitTool], maxSteps: 5, context: contextBudget({ maxTokens: 100_000 }), todos: false };
const model = () => openAiModel({ baseURL: server.url, apiKey: 'test', model: 'scripted', maxRetries: 0 });
const prompt = { id: 'in-1', text: 'wait a bit', messages: ['wait a bit'], subject: 'alice' };
/** The runner's clock, as the loop is given it: it stands still. */
const STEP_AT = '2026-12-01T00:00:00.000Z';
const now = () => new Date(STEP_AT);

/**
 * A store standing in for the conversation's: `store` says what a commit stores (by default what
 * it was given), and the answer is the turn with it folded in, as the conversation's fold answers.
 */
function storeFrom(turn: TurnState, store: (events: DomainEvent[]) => DomainEvent[] = (events) => events) {
  return async (events: DomainEvent[]): Promise<StoredTurn> => {
    const stored = store(events);
    turn = stored.reduce(evolveTurn, turn);
    return { turn, ended: stored.some((e) => e.type === 'turn.ended') };
  };
}

type RunOptions = {
  turn?: ReturnType<typeof startTurn>;
  signal?: AbortSignal;
  agent?: Agent;
  model?: ModelClient;
  history?: ModelMessage[][];
  windDown?: AbortSignal;
  pending?: () => number;
  /** What the runner decides for a call of the built-in `schedule` tool at its step (stored as a commit). */
  scheduleCall?: (call: ToolCall, step: number) => DomainEvent[];
};

/** Starts a turn; `commits` and `tokens` fill as it runs, `ended` settles with it (rejects when it is aborted). */
function start(options: RunOptions = {}) {
  const commits: DomainEvent[][] = [];
  const tokens: string[] = [];
  const turn = options.turn ?? startTurn('t1', prompt);
  const commit = storeFrom(turn, (events) => {
    commits.push(events);
    return events;
  });
  const { scheduleCall } = options;
  const ended = runTurn({
    conversation: 'c',
    agent: options.agent ?? agent,
    model: options.model ?? model(),
    history: () => ({ summary: null, earlier: (options.history ?? []).map((messages) => ({ messages })) }),
    turn,
    commit,
    ...(scheduleCall ? { scheduleCall: (call: ToolCall, step: number) => commit(scheduleCall(call, step)) } : {}),
    onToken: (_, text) => tokens.push(text),
    now,
    signal: options.signal ?? new AbortController().signal,
    windDown: options.windDown,
    pending: options.pending,
  });
  return { commits, tokens, ended };
}

async function run(options: RunOptions = {}) {
  const { commits, tokens, ended } = start(options);
  return { commits, tokens, ended: await ended };
}

describe('the agent loop', () => {
  it('a reply without tool calls is stored with turn.ended in one commit, and streams its tokens', async () => {
    server.setScript(() => reply.text('hello there friend'));
    const { commits, tokens } = await run();
    expect(commits.map((c) => c.map((e) => e.type))).toEqual([['model.replied', 'turn.ended']]);
    expect(commits[0][1]).toMatchObject({ data: { status: 'completed', content: 'hello there friend' } });
    expect(tokens.join('')).toBe('hello there friend');
  });

  it('a tool call runs, its result is stored, and the next request has it after the call', async () => {
    const before = server.requests.length;
    server.setScript((request) =>
      toolResults(request).length > 0 ? reply.text('done') : reply.tools([{ id: 'c1', name: 'wait', arguments: { ms: 5 } }], { content: 'one moment' }),
    );
    const { commits, ended } = await run();
    expect(commits.map((c) => c.map((e) => e.type))).toEqual([
      ['model.replied', 'tool.started'],
      ['tool.ended'],
      ['model.replied', 'turn.ended'],
    ]);
    expect(commits[1][0]).toMatchObject({ data: { callId: 'c1', result: 'waited 5 ms', isError: false } });
    expect(commits[2][1]).toMatchObject({ data: { content: 'one moment\n\ndone' } });
    expect(ended.answers).toEqual(['one moment', 'done']);
    const second = server.requests[before + 1].body.messages;
    expect(second.slice(-2)).toMatchObject([
      { role: 'assistant', tool_calls: [{ id: 'c1', function: { name: 'wait' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'waited 5 ms' },
    ]);
  });

  it('a resumed turn does not ask again for a stored reply, and runs only the calls without a result', async () => {
    const before = server.requests.length;
    server.setScript(() => reply.text('after resume'));
    const calls = [
      { id: 'c1', name: 'wait', arguments: '{"ms":1}' },
      { id: 'c2', name: 'wait', arguments: '{"ms":2}' },
    ];
    const stored: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: calls } },
      { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'waited 1 ms', isError: false } },
    ];
    const { commits } = await run({ turn: stored.reduce(evolveTurn, startTurn('t1', prompt)) });
    expect(commits[0]).toEqual([
      { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c2', name: 'wait', result: 'waited 2 ms', isError: false } },
    ]);
    expect(server.requests.length - before).toBe(1);
    expect(commits[1][0]).toMatchObject({ type: 'model.replied', data: { step: 1, content: 'after resume' } });
  });

  it('a call with bad arguments is answered with an error the model reads, and the turn goes on', async () => {
    server.setScript((request) =>
      toolResults(request).length > 0 ? reply.text('sorry') : reply.tools([{ id: 'c1', name: 'wait', arguments: { ms: 'soon' } }]),
    );
    const { commits } = await run();
    expect(commits[1][0]).toMatchObject({ type: 'tool.ended', data: { isError: true } });
    expect(commits[1][0].type === 'tool.ended' && commits[1][0].data.result).toMatch(/invalid arguments/);
    expect(commits[2][1]).toMatchObject({ data: { status: 'completed' } });
  });

  it('a model that fails ends the turn as failed, saying why', async () => {
    server.setScript(() => reply.error(500, 'the model is down'));
    const { commits } = await run();
    expect(commits).toHaveLength(1);
    expect(commits[0][0]).toMatchObject({ type: 'turn.ended', data: { status: 'failed' } });
    expect(commits[0][0].type === 'turn.ended' && commits[0][0].data.outcome).toMatch(/500/);
  });

  it('a turn past its step limit fails instead of asking the model again', async () => {
    server.setScript(() => reply.tools([{ name: 'wait', arguments: { ms: 0 } }]));
    const before = server.requests.length;
    const { commits } = await run();
    expect(server.requests.length - before).toBe(agent.maxSteps);
    expect(commits.at(-1)?.[0]).toMatchObject({ type: 'turn.ended', data: { status: 'failed' } });
  });

  it('aborting during a tool call stores nothing more and rejects', async () => {
    // A tool that says when it runs, and runs until the turn's signal aborts: the abort comes during the call by construction.
    let running: () => void;
    const toolRuns = new Promise<void>((resolve) => (running = resolve));
    const held = defineTool({
      name: 'held',
      description: 'Runs until aborted.',
      parameters: z.object({}),
      run: (_, { signal }) =>
        new Promise<string>((_resolve, reject) => {
          running();
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    });
    server.setScript(() => reply.tools([{ id: 'c1', name: 'held', arguments: {} }]));
    const controller = new AbortController();
    const { commits, ended: turn } = start({ agent: { ...agent, tools: [held] }, signal: controller.signal });
    await toolRuns;
    controller.abort(new Error('released'));
    await expect(turn).rejects.toThrow('released');
    expect(commits.map((c) => c.map((e) => e.type))).toEqual([['model.replied', 'tool.started']]);
  });

  it("aborted while the model replies, stores nothing even from a model client that answers with what it had (your own agent's client may)", async () => {
    const controller = new AbortController();
    const partial: ModelClient = {
      reply: async ({ signal }) => {
        controller.abort(new Error('stop requested'));
        expect(signal.aborted).toBe(true);
        return { content: 'half a rep', toolCalls: [] };
      },
    };
    const { commits, ended: turn } = start({ model: partial, signal: controller.signal });
    await expect(turn).rejects.toThrow('stop requested');
    expect(commits).toEqual([]);
  });

  it('when the store takes a steer instead of ending the turn, the model is asked once more with it last', async () => {
    server.setScript((request) => reply.text(`seen ${request.body.messages.length} messages`));
    const before = server.requests.length;
    let steered = false;
    const commits: DomainEvent[][] = [];
    const ended = await runTurn({
      conversation: 'c',
      agent,
      model: model(),
      history: () => ({ summary: null, earlier: [] }),
      turn: startTurn('t1', prompt),
      commit: storeFrom(startTurn('t1', prompt), (events) => {
        // What the conversation's store does when a steer landed while the model wrote its final answer.
        const stored: DomainEvent[] = steered
          ? events
          : [...events.filter((e) => e.type !== 'turn.ended'), { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's', text: 'use Celsius' } } }];
        steered = true;
        commits.push(stored);
        return stored;
      }),
      now,
      signal: new AbortController().signal,
    });
    expect(server.requests.length - before).toBe(2);
    expect(server.requests[before + 1].body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'seen 2 messages' },
      { role: 'user', content: 'use Celsius' },
    ]);
    expect(ended.answers).toEqual(['seen 2 messages', 'seen 4 messages']);
    expect(commits.at(-1)?.at(-1)).toMatchObject({
      type: 'turn.ended',
      data: { content: 'seen 2 messages\n\nseen 4 messages', steered: [{ id: 's', text: 'use Celsius' }] },
    });
  });

  it('a turn whose stop was asked for ends stopped, with a result for every call still open', async () => {
    const before = server.requests.length;
    const calls = [{ id: 'c1', name: 'wait', arguments: '{"ms":10000}' }];
    const stored: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'waiting', toolCalls: calls } },
      { type: 'stop.requested', data: { stop: 'halt', turn: 't1', mode: 'stop' } },
    ];
    const turn = stored.reduce(evolveTurn, startTurn('t1', prompt));
    const { commits } = await run({ turn });
    expect(server.requests.length).toBe(before);
    expect(commits).toEqual([
      [
        { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'not run to the end: the turn was stopped', isError: true } },
        { type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: 'stopped on request', content: 'waiting', steered: [] } },
      ],
    ]);
  });

  it('when the store ends the turn with a tool result (interrupted at its step), the model is not asked again', async () => {
    server.setScript(() => reply.tools([{ id: 'c1', name: 'wait', arguments: { ms: 1 } }]));
    const before = server.requests.length;
    const commits: DomainEvent[][] = [];
    await runTurn({
      conversation: 'c',
      agent,
      model: model(),
      history: () => ({ summary: null, earlier: [] }),
      turn: startTurn('t1', prompt),
      commit: storeFrom(startTurn('t1', prompt), (events) => {
        const stored: DomainEvent[] = events.some((e) => e.type === 'tool.ended')
          ? [...events, { type: 'turn.ended', data: { turn: 't1', status: 'superseded', outcome: 'interrupted', content: '', steered: [] } }]
          : events;
        commits.push(stored);
        return stored;
      }),
      now,
      signal: new AbortController().signal,
    });
    expect(server.requests.length - before).toBe(1);
    expect(commits.at(-1)?.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded' } });
  });
  it('each request fits the agent’s budget as the model counts it: earlier turns that do not fit are left out whole, the oldest first', async () => {
    server.setScript(() => reply.text('short'));
    const before = server.requests.length;
    const history = Array.from({ length: 6 }, (_, i) => [userMessage(`question ${i} `.repeat(40)), assistantMessage(`answer ${i}`, [])]);
    const budgeted: Agent = { ...agent, context: contextBudget({ maxTokens: 400 }) };
    await run({ agent: budgeted, history });
    const sent = server.requests[before];
    // The scripted model counts what it receives as the budget does.
    expect(sent.tokens).toBe(countRequest(sent.body.messages as ModelMessage[], budgeted.tools));
    expect(sent.tokens).toBeLessThanOrEqual(400);
    const carried = (sent.body.messages.length - 2) / 2;
    expect(carried).toBeGreaterThan(0);
    expect(carried).toBeLessThan(6);
    expect(sent.body.messages.slice(1)).toEqual([...history.slice(6 - carried).flat(), { role: 'user', content: prompt.text }]);
  });

  it('a turn whose next request cannot fit its budget ends failed, saying why, without asking the model', async () => {
    const before = server.requests.length;
    const stored: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [{ id: 'c1', name: 'wait', arguments: '{}' }] } },
      { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'lantern '.repeat(2000), isError: false } },
    ];
    const tight: Agent = { ...agent, context: contextBudget({ maxTokens: 1000, toolResultTokens: 5000 }) };
    const { commits } = await run({ agent: tight, turn: stored.reduce(evolveTurn, startTurn('t1', prompt)) });
    expect(server.requests.length).toBe(before);
    expect(commits).toEqual([
      [
        {
          type: 'turn.ended',
          data: { turn: 't1', status: 'failed', outcome: expect.stringMatching(/^the turn does not fit the model's context window: \d+ tokens over a budget of 1000$/), content: '', steered: [] },
        },
      ],
    ]);
  });

  it('learns from the usage the model reports: prompt tokens twice the count halve what later requests carry', async () => {
    server.setScript(() => reply.text('short'));
    const inner = model();
    const doubling: ModelClient = {
      reply: async (request) => {
        const answer = await inner.reply(request);
        return { ...answer, usage: { ...answer.usage!, promptTokens: answer.usage!.promptTokens * 2 } };
      },
    };
    const learning: Agent = { ...agent, context: contextBudget({ maxTokens: 100_000 }) };
    await run({ agent: learning, model: doubling });
    expect(learning.context.usage.value).toBe(2);
  });

  it('compacts at a step when the carried history passes compactAt: the compaction is a step of its own, and the step’s request then carries the instructions, the summary and the kept turns whole', async () => {
    server.setScript(() => reply.text('short'));
    const before = server.requests.length;
    const earlier = Array.from({ length: 6 }, (_, i) => ({ messages: [userMessage(`question ${i} `.repeat(40)), assistantMessage(`answer ${i}`, [])] }));
    const compacting: Agent = { ...agent, context: contextBudget({ maxTokens: 10_000, compactAt: 600 }) };
    let history = { summary: null as string | null, earlier };
    const asked: { keep: number; step: number }[] = [];
    const turn = startTurn('t1', prompt);
    const commit = storeFrom(turn);
    await runTurn({
      conversation: 'c',
      agent: compacting,
      model: model(),
      history: () => history,
      compact: async (at) => {
        asked.push({ keep: at.keep, step: at.step });
        // What the worker does: a summary of all but the latest `keep`, stored as a step.
        history = { summary: 'what came before', earlier: earlier.slice(earlier.length - at.keep) };
        return commit([]);
      },
      turn,
      commit,
      now,
      signal: new AbortController().signal,
    });
    expect(asked).toHaveLength(1);
    expect(asked[0].step).toBe(0);
    expect(asked[0].keep).toBeGreaterThan(0);
    expect(asked[0].keep).toBeLessThan(6);
    expect(server.requests.length - before).toBe(1);
    expect(server.requests[before].body.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: `${SUMMARY_HEADING}\nwhat came before` },
      ...earlier.slice(6 - asked[0].keep).flatMap((t) => t.messages),
      { role: 'user', content: prompt.text },
    ]);
  });

  it('a compaction that could not be made (null) leaves the step’s request as it would be without it', async () => {
    server.setScript(() => reply.text('short'));
    const before = server.requests.length;
    const earlier = Array.from({ length: 3 }, (_, i) => ({ messages: [userMessage(`question ${i} `.repeat(40)), assistantMessage(`answer ${i}`, [])] }));
    const compacting: Agent = { ...agent, context: contextBudget({ maxTokens: 10_000, compactAt: 200 }) };
    let asked = 0;
    const turn = startTurn('t1', prompt);
    await runTurn({
      conversation: 'c',
      agent: compacting,
      model: model(),
      history: () => ({ summary: null, earlier }),
      compact: async () => {
        asked += 1;
        return null;
      },
      turn,
      commit: storeFrom(turn),
      now,
      signal: new AbortController().signal,
    });
    expect(asked).toBe(1);
    expect(server.requests.length - before).toBe(1);
    expect(server.requests[before].body.messages.slice(1)).toEqual([...earlier.flatMap((t) => t.messages), { role: 'user', content: prompt.text }]);
  });
});

describe('the plan (the built-in todos tool)', () => {
  const planner: Agent = { ...agent, todos: true };

  it('two calls of one reply change the plan one after the other, each stored with its result; the next request carries the plan after the instructions', async () => {
    const before = server.requests.length;
    server.setScript((request) =>
      toolResults(request).length > 0
        ? reply.text('planned')
        : reply.tools([
            { id: 'c1', name: 'todos', arguments: { add: ['fetch', 'migrate'] } },
            { id: 'c2', name: 'todos', arguments: { set: [{ n: 2, status: 'in_progress' }] } },
          ]),
    );
    const { commits, ended } = await run({ agent: planner });
    expect(commits.map((c) => c.map((e) => e.type))).toEqual([
      ['model.replied', 'tool.started', 'tool.started'],
      ['tool.ended', 'todos.updated'],
      ['tool.ended', 'todos.updated'],
      ['model.replied', 'turn.ended'],
    ]);
    expect(ended.todos).toEqual({ items: [{ n: 1, text: 'fetch', status: 'pending' }, { n: 2, text: 'migrate', status: 'in_progress' }], next: 3 });
    const [first, second] = server.requests.slice(before);
    expect(first.body.tools?.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(['wait', 'todos']);
    expect(first.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(second.body.messages.slice(0, 2)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'system', content: 'Your plan for this conversation, as you last wrote it with the todos tool:\n1. [pending] fetch\n2. [in_progress] migrate' },
    ]);
  });

  it('the demo model (npm start) keeps a plan of "plan: a, b, c", works on each step and ticks it off', async () => {
    server.setScript(demoScript);
    const steps = { id: 'in-2', text: 'plan: fetch, migrate', messages: ['plan: fetch, migrate'], subject: 'alice' };
    const { ended } = await run({ agent: { ...planner, maxSteps: 10 }, turn: startTurn('t2', steps) });
    expect(ended.todos.items).toEqual([{ n: 1, text: 'fetch', status: 'done' }, { n: 2, text: 'migrate', status: 'done' }]);
    expect(ended.answers.at(-1)).toMatch(/^All 2 steps are done/);
  });

  it('an agent that keeps no plan offers no todos tool, and a call of one is an unknown tool', async () => {
    const before = server.requests.length;
    server.setScript((request) => (toolResults(request).length > 0 ? reply.text('ok') : reply.tools([{ id: 'c1', name: 'todos', arguments: { add: ['x'] } }])));
    const { commits, ended } = await run();
    expect(server.requests[before].body.tools?.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(['wait']);
    expect(commits[1]).toEqual([expect.objectContaining({ type: 'tool.ended', data: expect.objectContaining({ isError: true, result: 'error: there is no tool named "todos"' }) })]);
    expect(ended.todos.items).toEqual([]);
  });
});

describe('the schedule tool (built in)', () => {
  it('an agent that makes schedules offers it; its call is stored by the runner (scheduleCall) with the result it decides; without it, a call is an unknown tool', async () => {
    const before = server.requests.length;
    server.setScript((request) =>
      toolResults(request).length > 0
        ? reply.text(`got ${toolResults(request).map((r) => r.content).join(', ')}`)
        : reply.tools([
            { id: 'c1', name: 'schedule', arguments: { op: 'list' } },
            { id: 'c2', name: 'wait', arguments: { ms: 1 } },
          ]),
    );
    const asked: [string, number][] = [];
    const scheduleCall = (call: ToolCall, step: number): DomainEvent[] => {
      asked.push([call.id, step]);
      return [{ type: 'tool.ended', data: { turn: 't1', step, callId: call.id, name: call.name, result: 'no schedules', isError: false } }];
    };
    const { commits, ended } = await run({ agent: { ...agent, schedules: true }, scheduleCall });
    expect(server.requests[before].body.tools?.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(['wait', 'schedule']);
    expect(asked).toEqual([['c1', 0]]);
    expect(commits.slice(1, 3).map((c) => c.map((e) => (e.type === 'tool.ended' ? e.data.callId : e.type))).sort()).toEqual([['c1'], ['c2']]);
    expect(ended.answers).toEqual([expect.stringMatching(/^got (no schedules, waited 1 ms|waited 1 ms, no schedules)$/)]);

    const without = server.requests.length;
    const plain = await run({ scheduleCall });
    expect(server.requests[without].body.tools?.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(['wait']);
    expect(plain.commits.flat().find((e) => e.type === 'tool.ended' && e.data.callId === 'c1')).toMatchObject({ data: { isError: true, result: 'error: there is no tool named "schedule"' } });
    expect(asked).toHaveLength(1);
  });
});

describe('winding down', () => {
  it("a tool sees the conversation's pending inputs, whether its turn was queued, and windDown, on which it returns what it has", async () => {
    const seen: { pending: number[]; queued: boolean } = { pending: [], queued: false };
    let waiting = 0;
    const windDown = new AbortController();
    const long = defineTool({
      name: 'long',
      description: 'works until asked to wind down',
      parameters: z.object({}),
      run: async (_args, context) => {
        seen.queued = context.queued;
        seen.pending.push(context.pending);
        waiting = 2;
        seen.pending.push(context.pending);
        setImmediate(() => windDown.abort());
        await new Promise((resolve) => context.windDown.addEventListener('abort', resolve, { once: true }));
        return 'did 3 of 10 items, then wound down';
      },
    });
    server.setScript((request) => (toolResults(request).length > 0 ? reply.text(`got ${toolResults(request)[0].content}`) : reply.tools([{ id: 'c1', name: 'long', arguments: {} }])));
    const queuedPrompt = { ...prompt, id: 'in-3', queued: true };
    const { ended } = await run({ agent: { ...agent, tools: [long] }, turn: startTurn('t3', queuedPrompt), windDown: windDown.signal, pending: () => waiting });
    expect(seen).toEqual({ pending: [0, 2], queued: true });
    expect(ended.answers).toEqual(['got did 3 of 10 items, then wound down']);
  });

  it('the wait tool stops waiting when asked to wind down, and says how long it waited', async () => {
    const windDown = new AbortController();
    windDown.abort();
    const context = { conversation: 'c', turn: 't', callId: 'c1', subject: 'alice', signal: new AbortController().signal, windDown: windDown.signal, pending: 0, queued: false };
    expect(await waitTool.run({ ms: 60_000 }, context)).toMatch(/^waited \d+ ms of 60000, then wound down$/);
  });
});

describe('tools that need approval', () => {
  const ran: string[] = [];
  const send = defineTool({
    name: 'send',
    description: 'sends',
    parameters: z.object({ to: z.string() }),
    needsApproval: ({ to }) => to !== 'me',
    run: async ({ to }, { callId }) => {
      ran.push(`${callId}:${to}`);
      return `sent to ${to}`;
    },
  });
  const approving: Agent = { ...agent, tools: [waitTool, send] };
  const calls = [
    { id: 'c1', name: 'send', arguments: '{"to":"bob"}' },
    { id: 'c2', name: 'send', arguments: '{"to":"me"}' },
  ];
  /** The turn as stored after a reply calling both: `c1` needs approval, `c2` does not. */
  const replied = (): TurnState => evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: calls } });
  const decided = (turn: TurnState, decision: 'approve' | 'deny', extra: { arguments?: string; reason?: string; subject?: string | null } = {}): TurnState => {
    const approval = turn.approvals.c1.approval;
    return evolveTurn(turn, {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval, callId: 'c1', tool: 'send', decision, reason: extra.reason ?? null, arguments: extra.arguments ?? null, subject: extra.subject === undefined ? 'alice' : extra.subject, input: 'd1' },
    });
  };
  /** Runs the turn until it parks or ends; answers its commits and the turn as the last commit left it. */
  async function runFrom(turn: TurnState, withAgent: Agent = approving) {
    const commits: DomainEvent[][] = [];
    let stored = turn;
    const ended = await runTurn({
      conversation: 'c',
      agent: withAgent,
      model: model(),
      history: () => ({ summary: null, earlier: [] }),
      turn,
      commit: async (events) => {
        commits.push(events);
        stored = events.reduce(evolveTurn, stored);
        return { turn: stored, ended: events.some((e) => e.type === 'turn.ended') };
      },
      now,
      signal: new AbortController().signal,
    });
    return { commits, turn: ended };
  }

  it('a call that needs approval is not run: approval.requested is stored, the others run, and the turn parks with no model request', async () => {
    ran.length = 0;
    const before = server.requests.length;
    const { commits, turn } = await runFrom(replied());
    const types = commits.map((c) => c.map((e) => e.type)).sort();
    expect(types).toEqual([['approval.requested'], ['tool.ended']]);
    const requested = commits.flat().find((e) => e.type === 'approval.requested')!;
    expect(requested).toMatchObject({ data: { turn: 't1', step: 0, call: calls[0], expiresAt: null } });
    expect(ran).toEqual(['c2:me']);
    expect(turn.openCalls.map((c) => c.id)).toEqual(['c1']);
    expect(turn.approvals.c1.status).toBe('awaiting');
    expect(server.requests.length).toBe(before);
    // Run again while it waits: nothing happens.
    expect((await runFrom(turn)).commits).toEqual([]);
  });

  it("an approval is requested at its step's time, as the runner's clock gives it, and expires its tool's approvalTimeout after that", async () => {
    const timed: Agent = { ...approving, tools: [waitTool, { ...send, approvalTimeout: 90_000 }] };
    const { commits } = await runFrom(replied(), timed);
    const requested = commits.flat().find((e) => e.type === 'approval.requested')!;
    expect(requested).toMatchObject({ data: { call: calls[0], requestedAt: STEP_AT, expiresAt: '2026-12-01T00:01:30.000Z' } });
  });

  it('approved, the call runs once with its arguments; with edited ones it runs with those and its result says so; then the model is asked', async () => {
    server.setScript((request) => reply.text(`saw ${toolResults(request).map((r) => r.content).join(' | ')}`));
    ran.length = 0;
    const parked = (await runFrom(replied())).turn;
    const { commits } = await runFrom(decided(parked, 'approve'));
    expect(ran).toEqual(['c2:me', 'c1:bob']);
    expect(commits[0]).toEqual([{ type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'send', result: 'sent to bob', isError: false } }]);
    expect(commits.at(-1)!.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);

    ran.length = 0;
    const edited = await runFrom(decided((await runFrom(replied())).turn, 'approve', { arguments: '{"to":"carol"}' }));
    expect(ran).toEqual(['c2:me', 'c1:carol']);
    expect(edited.commits[0][0]).toMatchObject({ data: { result: 'run with arguments edited by the user: {"to":"carol"}\n\nsent to carol', isError: false } });
  });

  it('denied, the call never runs and its result gives the reason; denied by its timeout, it says so', async () => {
    server.setScript(() => reply.text('ok'));
    ran.length = 0;
    const { commits } = await runFrom(decided((await runFrom(replied())).turn, 'deny', { reason: 'not bob' }));
    expect(ran).toEqual(['c2:me']);
    expect(commits[0][0]).toMatchObject({ data: { callId: 'c1', result: 'denied by the user: not bob', isError: true } });
    const timedOut = await runFrom(decided((await runFrom(replied())).turn, 'deny', { reason: 'timed out: nobody decided by then', subject: null }));
    expect(timedOut.commits[0][0]).toMatchObject({ data: { result: 'denied: timed out: nobody decided by then' } });
  });

  it('a waiting call is closed unrun when the turn is asked to end: by a stop with the turn, by an interrupt or a graceful stop at once', async () => {
    const parked = (await runFrom(replied())).turn;
    const asked = (mode: 'stop' | 'interrupt' | 'wind-down') => evolveTurn(parked, { type: 'stop.requested', data: { stop: 's', turn: 't1', mode } });
    const stopped = await runFrom(asked('stop'));
    expect(stopped.commits[0]).toMatchObject([
      { type: 'tool.ended', data: { callId: 'c1', result: 'not run: the turn was stopped while the call waited for approval', isError: true } },
      { type: 'turn.ended', data: { status: 'stopped' } },
    ]);
    server.setScript(() => reply.text('wound down'));
    const interrupted = await runFrom(asked('interrupt'));
    expect(interrupted.commits[0]).toMatchObject([{ type: 'tool.ended', data: { callId: 'c1', result: 'not run: a newer input interrupted the turn while the call waited for approval' } }]);
    const graceful = await runFrom(asked('wind-down'));
    expect(graceful.commits[0]).toMatchObject([{ type: 'tool.ended', data: { callId: 'c1', result: 'not run: the turn was asked to wind down while the call waited for approval' } }]);
  });

  it('a call the tool could not run anyway is not asked about: arguments its schema refuses are answered with the error', async () => {
    ran.length = 0;
    const turn = evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [{ id: 'c9', name: 'send', arguments: '{"to":5}' }] } });
    server.setScript(() => reply.text('ok'));
    const { commits } = await runFrom(turn);
    expect(commits[0][0]).toMatchObject({ type: 'tool.ended', data: { callId: 'c9', isError: true } });
    expect(ran).toEqual([]);
  });

  it("a person's edited arguments: refused when not JSON, not an object, or refused by the schema (the reason bounded); a server's schema is its own", () => {
    expect(argumentsError(send, '{"to":"carol"}')).toBeNull();
    expect(argumentsError(send, 'to=carol')).toBe('the arguments are not JSON');
    expect(argumentsError(send, '[1]')).toBe('the arguments are not a JSON object');
    expect(argumentsError(send, '{"to":5}')).toMatch(/to/);
    const many = defineTool({ name: 'many', description: '', parameters: z.object(Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field_${i}`, z.string()]))), run: async () => '' });
    const refused = argumentsError(many, '{}')!;
    expect(refused.length).toBeLessThan(1100);
    expect(refused).toMatch(/\(500 issues\)$/);
    expect(argumentsError({ ...send, inputSchema: { type: 'object' } }, '{"anything":1}')).toBeNull();
  });
});

describe('the next request sent ahead of the last tool result’s commit (quiet)', () => {
  /** A commit of the tool result held until `release`; every other commit stores at once. */
  function heldResults(turn: TurnState, store: (events: DomainEvent[]) => DomainEvent[] = (events) => events) {
    const commits: DomainEvent[][] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const inner = storeFrom(turn, store);
    const commit = async (events: DomainEvent[]) => {
      commits.push(events);
      if (events.some((e) => e.type === 'tool.ended')) await released;
      return inner(events);
    };
    return { commits, commit, release };
  }
  /** Runs the turn on `held`'s commits, the conversation quiet or not: its end, its tokens and what became of its requests sent ahead, as they come. */
  function runHeld(turn: TurnState, held: ReturnType<typeof heldResults>, quiet = true) {
    const tokens: string[] = [];
    const ahead: string[] = [];
    const ended = runTurn({
      conversation: 'c', agent, model: model(), history: () => ({ summary: null, earlier: [] }), turn,
      commit: held.commit, onToken: (_, text) => tokens.push(text), now, signal: new AbortController().signal, quiet: () => quiet,
      onAhead: (outcome) => ahead.push(outcome),
    });
    return { ended, tokens, ahead };
  }
  const twoSteps = () =>
    server.setScript((request) => (toolResults(request).length > 0 ? reply.text('done, after the wait') : reply.tools([{ id: 'c1', name: 'wait', arguments: { ms: 1 } }])));

  it('is sent while the commit is in flight, used once it stored that turn, and its tokens go out only then', async () => {
    twoSteps();
    const before = server.requests.length;
    const turn = startTurn('t1', prompt);
    const held = heldResults(turn);
    const { ended, tokens, ahead } = runHeld(turn, held);
    // The second request went out before the result's commit was done, and nothing of it streamed yet.
    await vi.waitFor(() => expect(server.requests.length - before).toBe(2), { timeout: 5000, interval: 5 });
    expect(held.commits.map((c) => c.map((e) => e.type))).toEqual([['model.replied', 'tool.started'], ['tool.ended']]);
    expect(tokens.join('')).toBe('');
    held.release();
    const last = await ended;
    expect(last.answers).toEqual(['done, after the wait']);
    expect(tokens.join('')).toBe('done, after the wait');
    expect(server.requests.length - before).toBe(2);
    expect(held.commits.map((c) => c.map((e) => e.type))).toEqual([['model.replied', 'tool.started'], ['tool.ended'], ['model.replied', 'turn.ended']]);
    expect(ahead).toEqual(['used']);
  });

  it('is aborted and made again when the commit took a steer: the stored reply answers the request with it, and no token of the first streams', async () => {
    twoSteps();
    const before = server.requests.length;
    const turn = startTurn('t1', prompt);
    const steer: DomainEvent = { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 'use Celsius' } } } as DomainEvent;
    const held = heldResults(turn, (events) => (events.some((e) => e.type === 'tool.ended') ? [...events, steer] : events));
    const { ended, tokens, ahead } = runHeld(turn, held);
    await vi.waitFor(() => expect(server.requests.length - before).toBe(2), { timeout: 5000, interval: 5 });
    held.release();
    await ended;
    expect(ahead).toEqual(['discarded']);
    const requests = server.requests.slice(before);
    expect(requests).toHaveLength(3);
    const last = (request: (typeof requests)[number]) => JSON.stringify(request.body.messages.at(-1));
    expect(last(requests[1])).not.toContain('use Celsius');
    expect(last(requests[2])).toContain('use Celsius');
    expect(tokens.join('')).toBe('done, after the wait');
  });

  it('is aborted and made again when the commit stored another result than the one it was made with (as many messages, one different)', async () => {
    twoSteps();
    const before = server.requests.length;
    const turn = startTurn('t1', prompt);
    const replaced = (events: DomainEvent[]) =>
      events.map((e) => (e.type === 'tool.ended' ? ({ ...e, data: { ...e.data, result: 'the result as stored' } } as DomainEvent) : e));
    const held = heldResults(turn, replaced);
    const { ended } = runHeld(turn, held);
    await vi.waitFor(() => expect(server.requests.length - before).toBe(2), { timeout: 5000, interval: 5 });
    held.release();
    await ended;
    const requests = server.requests.slice(before);
    expect(requests).toHaveLength(3);
    expect(requests[1].body.messages).toHaveLength(requests[2].body.messages.length);
    expect(JSON.stringify(requests[1].body.messages.at(-1))).not.toContain('the result as stored');
    expect(JSON.stringify(requests[2].body.messages.at(-1))).toContain('the result as stored');
  });

  it('is not sent when the conversation is not quiet: the request waits for the commit', async () => {
    twoSteps();
    const before = server.requests.length;
    const turn = startTurn('t1', prompt);
    const held = heldResults(turn);
    const { ended } = runHeld(turn, held, false);
    await vi.waitFor(() => expect(held.commits).toHaveLength(2), { timeout: 5000, interval: 5 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests.length - before).toBe(1);
    held.release();
    await ended;
    expect(server.requests.length - before).toBe(2);
  });
});
