import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { AgentAffordances, AgentName, DEBOUNCE_MS_MAX, QueuePolicy } from '@rudder/contracts';
import {
  argumentsError,
  defineTool,
  openAiModel,
  runTurn,
  textTokens,
  SCHEDULE_TOOL,
  TODOS_TOOL,
  transferToolName,
  type Agent,
  type HandoffFilter,
  type HandoffTarget,
  type ModelClient,
  type OutputGuard,
  type Tool,
  type TurnLoop,
} from '@rudder/agent';
import type { Agents, InputPolicy } from '@rudder/conversation';
import { createLog, type Config } from '@rudder/runtime';
import { AGENT_TOOL, type AgentToolOptions } from './agent-tool.decorator';
import type { AgentDefinition, GuardInput, GuardVerdict, ModelSettings } from './agent-definition';
import { TURN_WORKER_OPTIONS, type TurnWorkerOptions } from '../turn-worker.options';
import { contextOf, readContextEnv, type ContextEnv } from './context-window';
import { WorkerMetrics } from '../metrics/worker-metrics';
import { tracedModel, tracedTool } from '../tracing/traced';
import type { z } from 'zod';
import { McpConnection } from './mcp/mcp-connection';
import { checkMcpServer } from './mcp/mcp-tools';

/** An agent as the worker runs it. */
export type RunnableAgent = {
  name: string;
  systemPrompt(conversation: string): Promise<string>;
  /** Its `tools` are read at each model request: an MCP server's come and go (connected, lost, changed). */
  loop: Omit<Agent, 'systemPrompt' | 'filter'>;
  /** What the requests of the agent it hands a conversation to carry for the rest of that turn (`handoffs`' `filter`, else `handoffFilter`); undefined: everything. */
  handoffFilter(to: string): HandoffFilter | undefined;
  /** The loop its turns run: Rudder's own (`runTurn`), or a framework's adapter. */
  run: TurnLoop;
  /** Whether `run` is a framework's: its tools are the framework's own (their arguments are its to check). */
  framework: boolean;
  model: ModelClient;
  policy: InputPolicy;
  /** How many earlier turns its model requests carry (`history.turns`). */
  historyTurns: number;
  guard(input: GuardInput): Promise<GuardVerdict>;
  /** How long its guard may take on one input (`guardTimeoutMs`). */
  guardTimeoutMs: number;
};

/** An agent's guard's time budget per input when its definition sets none. */
export const GUARD_TIMEOUT_MS = 3000;
/** An agent's output guard's time budget per answer when its definition sets none. */
export const OUTPUT_GUARD_TIMEOUT_MS = 10_000;
/** How many times a turn asks the model again after its output guard rejected an answer, when the definition sets no `maxReasks`. */
export const MAX_REASKS = 2;
/** The waits before each retry of an output guard that failed on an answer: then the turn fails. */
export const OUTPUT_GUARD_RETRY_DELAYS_MS = [200, 400, 800];

/**
 * The deployment's agents, built at start-up from the module's definitions: tools given as
 * provider classes are found among the application's providers (DiscoveryService), their
 * `@AgentTool` methods bound to the instances Nest made, so they use the services injected
 * into them. The agents' MCP servers are connected before the worker takes partitions (each
 * first attempt, successful or not: one that is down is retried meanwhile), and closed on
 * shutdown.
 */
@Injectable()
export class AgentRegistry implements Agents, OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly agents = new Map<string, RunnableAgent>();
  private readonly mcp: McpConnection[] = [];
  private readonly log = createLog('turn-worker');
  defaultAgent = '';

  constructor(
    @Inject(TURN_WORKER_OPTIONS) private readonly options: TurnWorkerOptions & { config: Config },
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(WorkerMetrics) private readonly metrics: WorkerMetrics,
  ) {}

  onModuleInit(): void {
    const { agents, config } = this.options;
    if (agents.length === 0) throw new Error('TurnWorkerModule: register at least one agent');
    const contextEnv = readContextEnv();
    for (const definition of agents) {
      const name = AgentName.safeParse(definition.name);
      if (!name.success) throw new Error(`TurnWorkerModule: agent name ${JSON.stringify(definition.name)}: ${name.error.issues[0].message}`);
      if (this.agents.has(definition.name)) throw new Error(`TurnWorkerModule: two agents are named ${definition.name}`);
      this.agents.set(definition.name, this.build(definition, config, contextEnv));
    }
    for (const definition of agents) this.checkHandoffs(definition);
    this.defaultAgent = this.options.defaultAgent ?? agents[0].name;
    if (!this.agents.has(this.defaultAgent)) throw new Error(`TurnWorkerModule: the default agent ${this.defaultAgent} is not registered`);
    // The tokenizer builds its tables on its first use (~100 ms): at start-up, before the worker
    // takes partitions, not on the first turn after a restart.
    textTokens('warm up');
  }

  async onApplicationBootstrap(): Promise<void> {
    await Promise.all(this.mcp.map((connection) => connection.start()));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.mcp.map((connection) => connection.close()));
  }

  /** How many earlier turns a conversation's fold keeps: the most any agent's model request carries (`history.turns`). */
  historyKept(): number {
    return Math.max(...[...this.agents.values()].map((a) => a.historyTurns));
  }

  get(name: string | null): RunnableAgent | undefined {
    return this.agents.get(name ?? this.defaultAgent);
  }

  /** Each agent's follow-ups and recap settings, as the companion reads them (`registerAgents`). */
  affordances(): { name: string; affordances: AgentAffordances }[] {
    return this.options.agents.map((a) => ({ name: a.name, affordances: a.affordances ?? {} }));
  }

  /** Whether any agent has an input guard (else the guards' round trip is skipped). */
  anyGuard(): boolean {
    return this.options.agents.some((a) => a.guard !== undefined);
  }

  policyOf(name: string): InputPolicy | undefined {
    return this.agents.get(name)?.policy;
  }

  /** Why a person's edited arguments for a call of the agent's `tool` are refused (its schema's word), or null. */
  argumentsError(agent: string, tool: string, args: string): string | null {
    const runnable = this.agents.get(agent);
    // A framework's agent checks its tools' arguments itself, when the call runs.
    if (runnable?.framework) return null;
    const found = runnable?.loop.tools.find((t) => t.name === tool);
    return found ? argumentsError(found, args) : `the agent has no tool named ${tool} now`;
  }

  /** An agent's handoffs name agents of this worker that run Rudder's own loop, each once, and their tools' names are their own. */
  private checkHandoffs(definition: AgentDefinition): void {
    const targets = handoffTargets(definition);
    if (targets.length > 0 && definition.loop) throw new Error(`TurnWorkerModule: agent ${definition.name} runs a framework's loop: its handoffs are the framework's own, not Rudder's`);
    const seen = new Set<string>();
    for (const { agent } of targets) {
      const target = this.agents.get(agent);
      if (!target) throw new Error(`TurnWorkerModule: agent ${definition.name} hands off to ${agent}, which is not registered`);
      if (agent === definition.name) throw new Error(`TurnWorkerModule: agent ${definition.name} hands off to itself`);
      if (target.framework) throw new Error(`TurnWorkerModule: agent ${definition.name} hands off to ${agent}, which runs a framework's loop: a handoff goes to an agent of Rudder's own loop`);
      const tool = transferToolName(agent);
      if (seen.has(tool)) throw new Error(`TurnWorkerModule: agent ${definition.name} has two handoffs whose tool is named ${tool}`);
      if (tool.length > 64) throw new Error(`TurnWorkerModule: agent ${definition.name}: the handoff tool ${tool} is longer than a tool name may be (64)`);
      seen.add(tool);
    }
  }

  private build(definition: AgentDefinition, config: Config, contextEnv: ContextEnv): RunnableAgent {
    const { instructions } = definition;
    const tools = (definition.tools ?? []).flatMap((tool) => (typeof tool === 'function' ? this.toolsOf(tool, definition.name) : [tool]));
    const historyTurns = definition.history?.turns ?? config.HISTORY_TURNS;
    if (!Number.isInteger(historyTurns) || historyTurns < 0) throw new Error(`TurnWorkerModule: agent ${definition.name}: history.turns must be a whole number, 0 or more`);
    if (definition.queue !== undefined && !QueuePolicy.safeParse(definition.queue).success) {
      throw new Error(
        `TurnWorkerModule: agent ${definition.name}: queue must be "each", "latest", "merge" or {debounceMs} with 0 < debounceMs ≤ ${DEBOUNCE_MS_MAX} (not ${JSON.stringify(definition.queue)})`,
      );
    }
    const guardTimeoutMs = definition.guardTimeoutMs ?? GUARD_TIMEOUT_MS;
    if (!Number.isInteger(guardTimeoutMs) || guardTimeoutMs <= 0) throw new Error(`TurnWorkerModule: agent ${definition.name}: guardTimeoutMs must be a whole number of milliseconds, more than 0`);
    const outputGuard = outputGuardOf(definition);
    const names = tools.map((t) => t.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new Error(`TurnWorkerModule: agent ${definition.name} has two tools named ${twice}`);
    const affordances = AgentAffordances.safeParse(definition.affordances ?? {});
    if (!affordances.success) throw new Error(`TurnWorkerModule: agent ${definition.name}: affordances: ${affordances.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    const todos = definition.todos ?? false;
    if (todos && names.includes(TODOS_TOOL)) throw new Error(`TurnWorkerModule: agent ${definition.name} keeps a plan, whose built-in tool is named ${TODOS_TOOL}: name its own tool otherwise`);
    const schedules = definition.schedules ?? false;
    if (schedules && names.includes(SCHEDULE_TOOL)) throw new Error(`TurnWorkerModule: agent ${definition.name} makes schedules, whose built-in tool is named ${SCHEDULE_TOOL}: name its own tool otherwise`);
    if (schedules && definition.loop) throw new Error(`TurnWorkerModule: agent ${definition.name} runs a framework's loop: the built-in schedule tool is Rudder's own loop's`);
    const handoffs = handoffTargets(definition);
    const transfers = handoffs.map((h) => transferToolName(h.agent));
    const taken = names.find((n) => transfers.includes(n));
    if (taken) throw new Error(`TurnWorkerModule: agent ${definition.name} hands off with a built-in tool named ${taken}: name its own tool otherwise`);
    const badLimit = tools.find((t) => t.maxResultTokens !== undefined && (!Number.isInteger(t.maxResultTokens) || t.maxResultTokens <= 0));
    if (badLimit) throw new Error(`TurnWorkerModule: agent ${definition.name}: the maxResultTokens of tool ${badLimit.name} must be a whole number of tokens, more than 0`);
    const badTimeout = tools.find((t) => t.approvalTimeout !== undefined && (!Number.isInteger(t.approvalTimeout) || t.approvalTimeout <= 0));
    if (badTimeout) throw new Error(`TurnWorkerModule: agent ${definition.name}: the approvalTimeout of tool ${badTimeout.name} must be a whole number of milliseconds, more than 0`);
    // A client of the agent's own has no name this worker could know its context window by.
    const settings = isModelClient(definition.model) ? undefined : (definition.model ?? {});
    const context = contextOf(definition, { name: settings && (settings.model ?? config.OPENAI_MODEL), replyTokens: settings?.maxTokens }, contextEnv);
    const own = tools.map(tracedTool);
    // A new array each time they change, the same one meanwhile (the tools' token count is kept by array).
    let offered: readonly Tool[] = own;
    // An MCP tool named as one of its own, or as a built-in tool (the plan's, a transfer's), is left out (and said).
    const connections: McpConnection[] = this.mcpOf(definition, new Set([...names, ...(todos ? [TODOS_TOOL] : []), ...(schedules ? [SCHEDULE_TOOL] : []), ...transfers]), () => {
      offered = withMcpTools(own, connections);
    });
    return {
      name: definition.name,
      systemPrompt: async (conversation) => (typeof instructions === 'string' ? instructions : instructions({ conversation })),
      loop: {
        get tools() {
          return offered;
        },
        maxSteps: definition.maxSteps ?? 32,
        context,
        todos,
        schedules,
        name: definition.name,
        handoffs: handoffs.map(({ agent, description }) => (description === undefined ? { agent } : { agent, description })),
        ...(outputGuard ? { outputGuard } : {}),
      },
      handoffFilter: (to) => handoffs.find((h) => h.agent === to)?.filter ?? definition.handoffFilter,
      run: definition.loop ?? runTurn,
      framework: definition.loop !== undefined,
      model: tracedModel(this.metrics.timed(isModelClient(definition.model) ? definition.model : modelOf(definition.model ?? {}, config)), definition.name),
      policy: {
        maxTaken: definition.steering?.maxTaken ?? config.STEERS_PER_TURN,
        bounds: {
          steers: definition.bounds?.steers ?? config.MAX_PENDING_STEERS,
          chats: definition.bounds?.chats ?? config.MAX_PENDING_CHATS,
          chars: definition.bounds?.chars ?? config.MAX_PENDING_CHARS,
        },
        ...(definition.queue === undefined ? {} : { queue: definition.queue }),
      },
      historyTurns,
      guard: async (input) => (definition.guard ? definition.guard(input) : null),
      guardTimeoutMs,
    };
  }

  /** The agent's MCP servers, checked, each a connection not started yet (`onApplicationBootstrap`). */
  private mcpOf(definition: AgentDefinition, ownTools: ReadonlySet<string>, changed: () => void): McpConnection[] {
    const servers = definition.mcp ?? [];
    const names = servers.map((s) => s.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new Error(`TurnWorkerModule: agent ${definition.name} has two MCP servers named ${twice}`);
    const connections = servers.map((server) => {
      checkMcpServer(server, definition.name);
      return new McpConnection({ agent: definition.name, server, ownTools, changed, wrap: tracedTool, log: this.log, metrics: this.metrics });
    });
    this.mcp.push(...connections);
    return connections;
  }

  /** The `@AgentTool` methods of the provider instance of `type`. */
  private toolsOf(type: Type<unknown>, agent: string): Tool[] {
    const wrapper = this.discovery.getProviders().find((p) => p.metatype === type && p.instance);
    if (!wrapper) throw new Error(`TurnWorkerModule: agent ${agent} lists ${type.name} as tools, but it is not a provider of any module`);
    const instance = wrapper.instance as Record<string, (...args: unknown[]) => Promise<string>>;
    const tools = this.scanner.getAllMethodNames(Object.getPrototypeOf(instance)).flatMap((method) => {
      const meta = this.reflector.get<AgentToolOptions<z.ZodType> | undefined>(AGENT_TOOL, instance[method]);
      return meta ? [defineTool({ ...meta, run: (args, context) => instance[method](args, context) })] : [];
    });
    if (tools.length === 0) throw new Error(`TurnWorkerModule: ${type.name} (a tool provider of agent ${agent}) has no @AgentTool method`);
    return tools;
  }
}

/** An agent's handoffs, each as an object. */
const handoffTargets = (definition: AgentDefinition): (HandoffTarget & { filter?: HandoffFilter })[] =>
  (definition.handoffs ?? []).map((h) => (typeof h === 'string' ? { agent: h } : h));

/** The agent's output guard as its loop runs it, its settings checked; undefined when it has none. */
function outputGuardOf(definition: AgentDefinition): OutputGuard | undefined {
  const { outputGuard, maxReasks = MAX_REASKS, outputGuardTimeoutMs = OUTPUT_GUARD_TIMEOUT_MS } = definition;
  if (!Number.isInteger(maxReasks) || maxReasks < 0) throw new Error(`TurnWorkerModule: agent ${definition.name}: maxReasks must be a whole number, 0 or more`);
  if (!Number.isInteger(outputGuardTimeoutMs) || outputGuardTimeoutMs <= 0) {
    throw new Error(`TurnWorkerModule: agent ${definition.name}: outputGuardTimeoutMs must be a whole number of milliseconds, more than 0`);
  }
  return outputGuard && { check: outputGuard, maxReasks, timeoutMs: outputGuardTimeoutMs, retryDelaysMs: OUTPUT_GUARD_RETRY_DELAYS_MS };
}

/** The agent's own tools, then each MCP server's that is connected, in the order the servers are listed; of two servers' tools of one name, the first's. */
function withMcpTools(own: readonly Tool[], connections: readonly McpConnection[]): readonly Tool[] {
  const tools = [...own];
  const names = new Set(own.map((t) => t.name));
  for (const tool of connections.flatMap((c) => c.tools)) {
    if (names.has(tool.name)) continue;
    names.add(tool.name);
    tools.push(tool);
  }
  return tools;
}

const isModelClient = (model: AgentDefinition['model']): model is ModelClient =>
  typeof (model as ModelClient | undefined)?.reply === 'function';

/** A model from its settings, the environment filling what they leave out. */
function modelOf(settings: ModelSettings, config: Config): ModelClient {
  const baseURL = settings.baseURL ?? config.OPENAI_BASE_URL;
  const apiKey = settings.apiKey ?? config.OPENAI_API_KEY;
  if (!apiKey && !baseURL) {
    throw new Error('set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) — or use `npm start`, which runs the offline demo model');
  }
  return openAiModel({ ...settings, baseURL, apiKey: apiKey ?? 'none', model: settings.model ?? config.OPENAI_MODEL });
}
