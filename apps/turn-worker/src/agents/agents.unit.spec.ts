import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { readConfig } from '@rudder/runtime';
import { WorkerMetrics } from '../metrics/worker-metrics';
import type { AgentDefinition } from './agent-definition';
import { AgentRegistry } from './agents';
import { DEFAULT_SUMMARY_PROMPT, defineTool, type ModelClient } from '@rudder/agent';
import { z } from 'zod';
import { defaultAgent } from './default-agent';
import { sample } from '../../../../test/prometheus';

/** The registry built from `agents` (plain tools only: no provider classes to discover) on an environment of `env`. */
function registry(agents: AgentDefinition[], env: Record<string, string> = {}, metrics = new WorkerMetrics()) {
  const config = readConfig({ KAFKA_BROKERS: '127.0.0.1:9', DATABASE_URL: 'postgres://127.0.0.1:9/none', OPENAI_API_KEY: 'test', ...env });
  const none = {} as never;
  const built = new AgentRegistry({ agents, config }, none as DiscoveryService, none as MetadataScanner, none as Reflector, metrics);
  built.onModuleInit();
  return built;
}

describe('an agent’s history.turns', () => {
  it('defaults to HISTORY_TURNS, and an agent’s own wins', () => {
    expect(registry([defaultAgent]).get(null)?.historyTurns).toBe(100);
    expect(registry([defaultAgent], { HISTORY_TURNS: '7' }).get(null)?.historyTurns).toBe(7);
    expect(registry([{ ...defaultAgent, history: { turns: 0 } }], { HISTORY_TURNS: '7' }).get(null)?.historyTurns).toBe(0);
  });

  it('refuses at start-up what is not a whole number, 0 or more', () => {
    for (const turns of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => registry([{ ...defaultAgent, history: { turns } }]), String(turns)).toThrow(/history\.turns must be a whole number/);
    }
    expect(() => registry([defaultAgent], { HISTORY_TURNS: '-1' })).toThrow();
  });
});

describe('an agent’s queue', () => {
  it('is its input policy’s (absent: each, every follow-up a turn of its own); start-up refuses another', () => {
    expect(registry([defaultAgent]).policyOf(defaultAgent.name)?.queue).toBeUndefined();
    expect(registry([{ ...defaultAgent, queue: 'latest' }]).policyOf(defaultAgent.name)?.queue).toBe('latest');
    expect(registry([{ ...defaultAgent, queue: 'merge' }]).policyOf(defaultAgent.name)?.queue).toBe('merge');
    expect(registry([{ ...defaultAgent, queue: { debounceMs: 500 } }]).policyOf(defaultAgent.name)?.queue).toEqual({ debounceMs: 500 });
    for (const queue of ['sometimes', { debounceMs: 0 }, { debounceMs: 60_001 }, { debounceMs: 2.5 }]) {
      expect(() => registry([{ ...defaultAgent, queue: queue as never }]), JSON.stringify(queue)).toThrow(/queue must be "each", "latest", "merge" or \{debounceMs\} with 0 < debounceMs ≤ 60000/);
    }
  });
});

describe('an agent’s context budget', () => {
  afterEach(() => vi.unstubAllEnvs());
  const context = (agent: AgentDefinition, env: Record<string, string> = {}) => registry([agent], env).get(null)!.loop.context;

  it('defaults to its model’s context window, known by name, less the room for its reply', () => {
    expect(context(defaultAgent, { OPENAI_MODEL: 'gpt-4o-mini' }).maxTokens).toBe(128_000 - 4096);
    expect(context({ ...defaultAgent, model: { model: 'gpt-4o-2024-08-06', maxTokens: 1000 } }).maxTokens).toBe(127_000);
    expect(context({ ...defaultAgent, model: { model: 'gpt-4.1-mini' } }).maxTokens).toBe(1_047_576 - 4096);
    expect(context({ ...defaultAgent, model: { model: 'gpt-4' } }).maxTokens).toBe(8192 - 4096);
    expect(context({ ...defaultAgent, model: { model: 'gpt-4-32k-0613' } }).maxTokens).toBe(32_768 - 4096);
  });

  it('else MODEL_CONTEXT_TOKENS (128,000 unless set): a model of another name, or a client of the agent’s own', () => {
    const own: ModelClient = { reply: async () => ({ content: '', toolCalls: [] }) };
    expect(context({ ...defaultAgent, model: own }).maxTokens).toBe(128_000 - 4096);
    vi.stubEnv('MODEL_CONTEXT_TOKENS', '32000');
    expect(context({ ...defaultAgent, model: own }).maxTokens).toBe(32_000 - 4096);
    expect(context({ ...defaultAgent, model: { model: 'llama-3.1-8b' } }).maxTokens).toBe(32_000 - 4096);
    expect(context({ ...defaultAgent, model: { model: 'gpt-4o' } }).maxTokens).toBe(128_000 - 4096);
  });

  it('an agent’s own wins; tool results default to TOOL_RESULT_TOKENS (8,000); compactAt to three quarters of maxTokens (null: never), the summary prompt to the built-in one', () => {
    expect(context(defaultAgent)).toMatchObject({ toolResultTokens: 8000, compactAt: Math.floor((128_000 - 4096) * 0.75), summaryPrompt: DEFAULT_SUMMARY_PROMPT });
    expect(context({ ...defaultAgent, context: { compactAt: null, summaryPrompt: 'Sum up.' } })).toMatchObject({ compactAt: null, summaryPrompt: 'Sum up.' });
    vi.stubEnv('TOOL_RESULT_TOKENS', '500');
    expect(context(defaultAgent).toolResultTokens).toBe(500);
    expect(context({ ...defaultAgent, context: { maxTokens: 6000, toolResultTokens: 900, compactAt: 5000 } })).toMatchObject({ maxTokens: 6000, toolResultTokens: 900, compactAt: 5000 });
  });

  it('refuses at start-up what is not a whole number of tokens, a compactAt past maxTokens, and a tool’s bad maxResultTokens', () => {
    for (const maxTokens of [0, -1, 1.5, Number.NaN]) {
      expect(() => context({ ...defaultAgent, context: { maxTokens } }), String(maxTokens)).toThrow(/context\.maxTokens must be a whole number/);
    }
    expect(() => context({ ...defaultAgent, context: { toolResultTokens: 0 } })).toThrow(/context\.toolResultTokens/);
    expect(() => context({ ...defaultAgent, context: { maxTokens: 100, compactAt: 101 } })).toThrow(/context\.compactAt/);
    expect(() => context({ ...defaultAgent, context: { summaryPrompt: ' ' } })).toThrow(/context\.summaryPrompt/);
    expect(() => context({ ...defaultAgent, model: { model: 'gpt-4', maxTokens: 9000 } })).toThrow(/leaves no room/);
    const tool = defineTool({ name: 'big', description: 'Big.', parameters: z.object({}), maxResultTokens: 0, run: async () => '' });
    expect(() => context({ ...defaultAgent, tools: [tool] })).toThrow(/maxResultTokens of tool big/);
  });
});

describe('an agent’s output guard', () => {
  it('runs with its settings, or 2 re-asks and a 10 s budget, retried after 200, 400 and 800 ms; none when the agent has no guard', () => {
    const outputGuard = () => 'pass' as const;
    expect(registry([{ ...defaultAgent, outputGuard }]).get(null)?.loop.outputGuard).toEqual({ check: outputGuard, maxReasks: 2, timeoutMs: 10_000, retryDelaysMs: [200, 400, 800] });
    expect(registry([{ ...defaultAgent, outputGuard, maxReasks: 0, outputGuardTimeoutMs: 50 }]).get(null)?.loop.outputGuard).toMatchObject({ maxReasks: 0, timeoutMs: 50 });
    expect(registry([defaultAgent]).get(null)?.loop.outputGuard).toBeUndefined();
  });

  it('refuses at start-up a maxReasks or a time budget that is not a whole number (0 or more; more than 0)', () => {
    for (const maxReasks of [-1, 1.5]) expect(() => registry([{ ...defaultAgent, maxReasks }]), String(maxReasks)).toThrow(/maxReasks must be a whole number, 0 or more/);
    for (const outputGuardTimeoutMs of [0, 2.5]) {
      expect(() => registry([{ ...defaultAgent, outputGuardTimeoutMs }]), String(outputGuardTimeoutMs)).toThrow(/outputGuardTimeoutMs must be a whole number of milliseconds/);
    }
  });
});

describe('an agent’s plan and affordances', () => {
  it('a plan’s built-in tool takes the name todos: an agent that keeps one may not have a tool of its own named so', () => {
    const own = defineTool({ name: 'todos', description: 'mine', parameters: z.object({}), run: async () => 'ok' });
    expect(() => registry([{ ...defaultAgent, tools: [own] }])).toThrow(/keeps a plan, whose built-in tool is named todos/);
    expect(registry([{ ...defaultAgent, tools: [own], todos: false }]).get(null)?.loop.todos).toBe(false);
    expect(registry([defaultAgent]).get(null)?.loop.todos).toBe(true);
  });

  it('the schedule tool takes the name schedule: an agent that makes schedules may not have a tool of its own named so, nor a framework`s loop', () => {
    const own = defineTool({ name: 'schedule', description: 'mine', parameters: z.object({}), run: async () => 'ok' });
    expect(() => registry([{ ...defaultAgent, tools: [own], schedules: true }])).toThrow(/makes schedules, whose built-in tool is named schedule/);
    expect(registry([{ ...defaultAgent, tools: [own] }]).get(null)?.loop.schedules).toBe(false);
    expect(registry([{ ...defaultAgent, schedules: true }]).get(null)?.loop.schedules).toBe(true);
    expect(() => registry([{ ...defaultAgent, schedules: true, loop: async (options) => options.turn }])).toThrow(/framework's loop: the built-in schedule tool/);
  });

  it('its follow-ups and recap settings are registered as given, and refused at start-up when they are not the shape', () => {
    const affordances = { followupsPrompt: 'suggest', model: 'small' };
    expect(registry([{ ...defaultAgent, affordances }, { ...defaultAgent, name: 'plain' }]).affordances()).toEqual([
      { name: 'default', affordances },
      { name: 'plain', affordances: {} },
    ]);
    expect(() => registry([{ ...defaultAgent, affordances: { recapPrompt: '' } }])).toThrow(/affordances: recapPrompt/);
  });
});

describe('an agent’s MCP servers', () => {
  const down = { name: 'crm', url: 'http://127.0.0.1:9/mcp', tools: ['find_customer'] };

  it('are checked at start-up: two of one name, or one that cannot run, are refused saying why', () => {
    expect(() => registry([{ ...defaultAgent, mcp: [down, down] }])).toThrow(/agent default has two MCP servers named crm/);
    expect(() => registry([{ ...defaultAgent, mcp: [{ ...down, tools: [] }] }])).toThrow(/agent default: MCP server "crm": tools must list/);
  });

  it('one that is down at start leaves the agent its own tools, the start goes on, and the metrics say it is down', async () => {
    const metrics = new WorkerMetrics();
    const built = registry([{ ...defaultAgent, mcp: [down] }], {}, metrics);
    await built.onApplicationBootstrap();
    try {
      expect(built.get(null)!.loop.tools.map((t) => t.name)).toEqual(['wait']);
      const text = await metrics.registry.metrics();
      expect(sample(text, 'rudder_mcp_server_up', { agent: 'default', server: 'crm' })).toBe(0);
      expect(sample(text, 'rudder_mcp_server_down_total', { agent: 'default', server: 'crm', how: 'down' })).toBe(1);
    } finally {
      await built.onApplicationShutdown();
    }
  });
});

describe('an agent’s handoffs', () => {
  const triage: AgentDefinition = { ...defaultAgent, name: 'triage', handoffs: [{ agent: 'billing', description: 'Invoices.' }] };
  const billing: AgentDefinition = { ...defaultAgent, name: 'billing', handoffs: ['triage'] };

  it('are its loop’s targets, with their descriptions; a handoff’s filter wins over the agent’s handoffFilter', () => {
    const own = () => [];
    const theirs = () => [];
    const agents = registry([{ ...triage, handoffs: [{ agent: 'billing', filter: own }, 'support'], handoffFilter: theirs }, billing, { ...defaultAgent, name: 'support' }]);
    expect(agents.get('triage')?.loop.handoffs).toEqual([{ agent: 'billing' }, { agent: 'support' }]);
    expect(agents.get('triage')?.handoffFilter('billing')).toBe(own);
    expect(agents.get('triage')?.handoffFilter('support')).toBe(theirs);
    expect(agents.get('billing')?.handoffFilter('triage')).toBeUndefined();
    expect(registry([triage, billing]).get('triage')?.loop.handoffs).toEqual([{ agent: 'billing', description: 'Invoices.' }]);
  });

  it('start-up refuses a target not registered, the agent itself, a framework’s agent, a tool of its own under a transfer tool’s name', () => {
    expect(() => registry([triage])).toThrow(/agent triage hands off to billing, which is not registered/);
    expect(() => registry([{ ...billing, handoffs: ['billing'] }])).toThrow(/hands off to itself/);
    const framework: AgentDefinition = { ...defaultAgent, name: 'billing', loop: async (options) => options.turn };
    expect(() => registry([triage, framework])).toThrow(/runs a framework's loop: a handoff goes to an agent of Rudder's own loop/);
    expect(() => registry([{ ...framework, name: 'triage', handoffs: ['billing'] }, billing])).toThrow(/its handoffs are the framework's own/);
    const clash = defineTool({ name: 'transfer_to_billing', description: 'mine', parameters: z.object({}), run: async () => 'ran' });
    expect(() => registry([{ ...triage, tools: [clash] }, billing])).toThrow(/built-in tool named transfer_to_billing/);
    expect(() => registry([{ ...triage, handoffs: ['a.b', 'a:b'] }, { ...defaultAgent, name: 'a.b' }, { ...defaultAgent, name: 'a:b' }])).toThrow(/two handoffs whose tool is named transfer_to_a_b/);
  });
});
