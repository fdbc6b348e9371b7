import type { Type } from '@nestjs/common';
import type { HandoffFilter, ModelClient, OutputGuardContext, OutputVerdict, Tool, TurnLoop } from '@rudder/agent';
import type { AgentAffordances, QueuePolicy } from '@rudder/contracts';
import type { McpServerDefinition } from './mcp/mcp-tools';

/** A model behind the Chat Completions API; what is not given comes from the environment (OPENAI_*). */
export type ModelSettings = {
  model?: string;
  baseURL?: string;
  apiKey?: string;
  temperature?: number;
  maxTokens?: number;
  /** Retries of a failed request (429, 5xx, connection errors) with backoff before the turn fails. Default 3. */
  maxRetries?: number;
};

/**
 * What an input guard sees: every chat and every steer, before it is accepted. `signal` is
 * aborted once the guard's time budget (`guardTimeoutMs`) is spent: a guard that calls out
 * should pass it on.
 */
export type GuardInput = { conversation: string; kind: 'chat' | 'steer'; text: string; subject: string; signal: AbortSignal };
/** A guard's verdict: `{ refuse: reason }` refuses the input (422, recorded as refused, never shown to the model). */
export type GuardVerdict = { refuse: string } | null | undefined;

/**
 * An agent this one may hand a conversation to (docs/agents.md, "Handoffs"): its name, or its
 * name with what the model is told of it (`description`) and what the receiving agent's
 * requests carry for the rest of the turn (`filter`, in place of the agent's `handoffFilter`).
 */
export type Handoff = string | { agent: string; description?: string; filter?: HandoffFilter };

/**
 * An agent a team runs behind Rudder. A conversation chooses its agent with its first chat
 * (`agent`, else the deployment's default) and keeps it until a handoff hands it to another.
 */
export type AgentDefinition = {
  /** 1-100 characters of [A-Za-z0-9._:-]; what `agent` on a chat names. */
  name: string;
  /** The system prompt: a text, or a function of the conversation, asked at the start of each model request. */
  instructions: string | ((context: { conversation: string }) => string | Promise<string>);
  /**
   * The loop its turns run: Rudder's own when absent, or a framework's — an agent written with
   * OpenAI Agents, the AI SDK, LangGraph or ADK, given by its adapter package (docs/frameworks.md).
   * A framework's agent keeps its own instructions, model and tools; Rudder's steering, queues,
   * guard, approvals and exactly-once apply to it all the same.
   */
  loop?: TurnLoop;
  /** OpenAI or any compatible server (settings), or a client of your own. Default: the environment's. */
  model?: ModelSettings | ModelClient;
  /**
   * Its tools: plain tools (`defineTool`), or provider classes whose methods marked with
   * `@AgentTool` are its tools (they are Nest providers: list them in a module's providers, and
   * they may inject your services).
   */
  tools?: (Tool | Type<unknown>)[];
  /**
   * MCP servers it takes tools from (docs/agents.md, "Tools from MCP servers"): stdio servers
   * the worker starts, Streamable HTTP servers by URL, each with an allow-list of its tools.
   * A server that is down leaves the agent running without its tools, and is retried.
   */
  mcp?: McpServerDefinition[];
  /** How many steered messages a turn takes at most; 0: its turns take none. Default STEERS_PER_TURN (16). */
  steering?: { maxTaken?: number };
  /** What may wait in one of its conversations. Defaults MAX_PENDING_STEERS / _CHATS / _CHARS. */
  bounds?: { steers?: number; chats?: number; chars?: number };
  /**
   * What a new follow-up does to those waiting before it (a chat's own `queue` overrides it):
   * `each` (default: every one is a turn of its own), `latest` (the waiting ones are answered as
   * collapsed into the new one: `inputs.collapsed`), `merge` (the new one joins the last follow-up
   * waiting: one turn whose prompt is all of them, in order, as a chat of several messages),
   * `{debounceMs}` (it merges as `merge` does, and no turn starts from the queue until no new
   * follow-up was sent for `debounceMs`; 0 < debounceMs ≤ 60000).
   */
  queue?: QueuePolicy;
  /**
   * Whether it keeps a plan per conversation (docs/agents.md, "The plan"): its model gets the
   * built-in `todos` tool (so no tool of its own may be named `todos`), and every model request
   * carries the plan right after the instructions. Tell the model in `instructions` when to open
   * one (work of several distinct steps, never a single step). Default false.
   */
  todos?: boolean;
  /**
   * Whether its model makes schedules of the conversation it answers in (docs/agents.md,
   * "Schedules the model makes"): it gets the built-in `schedule` tool (so no tool of its own may
   * be named `schedule`) to make, change, cancel and list them, each call decided under the
   * conversation's lock as a `schedule` input of the turn's prompt's subject, bounded as theirs
   * (SCHEDULES_MAX). Rudder's own loop only. Default false.
   */
  schedules?: boolean;
  /**
   * How the follow-up suggestions and the recap of its conversations are made (docs/agents.md,
   * "Follow-ups and recap"): `followupsPrompt` and `recapPrompt` replace the deployment's
   * instructions of each kind (the answer's JSON shape is always added after them), `model`
   * names the model to ask on the deployment's server. The companion makes them, so these are
   * plain settings (no `ModelClient` of your own); a worker registers them at start-up.
   * Default: the deployment's (FOLLOWUPS_PROMPT, RECAP_PROMPT, AFFORDANCE_MODEL).
   */
  affordances?: AgentAffordances;
  /**
   * The agents it may hand a conversation to (docs/agents.md, "Handoffs"), each registered in
   * the same worker and running Rudder's own loop. Its model gets a built-in tool per target,
   * `transfer_to_<name>` (no tool of its own may take that name); a call of it stores
   * `agent.changed`, and the rest of the turn and later turns run that agent until it hands on
   * (or back). Not for an agent with a `loop` of a framework's.
   */
  handoffs?: Handoff[];
  /**
   * What the receiving agent's requests carry for the rest of the turn of a handoff of this
   * agent's (`HandoffFilter`): it may drop history, never a call's output (each kept call keeps
   * its result). A handoff's own `filter` wins. Default: everything, as every request.
   */
  handoffFilter?: HandoffFilter;
  /** A turn fails rather than asking the model more than this many times. Default 32. */
  maxSteps?: number;
  /**
   * What its model requests carry of the conversation's earlier turns: the last `turns`, each
   * whole (prompt, steered messages, answers); 0: none. Default HISTORY_TURNS (100).
   */
  history?: { turns?: number };
  /**
   * What each of its model requests may carry, in tokens (docs/agents.md, "The context budget"):
   * `maxTokens`, the most a request carries as its model counts them (default: the model's
   * context window less the room for its reply); `toolResultTokens`, the most a tool result is
   * sent with, truncated past it with a marker (default TOOL_RESULT_TOKENS, 8000; a tool's own
   * `maxResultTokens` wins); `compactAt`, the carried tokens past which the history is compacted
   * at the next step (a summary of the older turns stands in for them; default: three quarters
   * of `maxTokens`; null: never, older turns are only left out); `summaryPrompt`, the system
   * prompt of the summary request (default `DEFAULT_SUMMARY_PROMPT`).
   */
  context?: { maxTokens?: number; compactAt?: number | null; toolResultTokens?: number; summaryPrompt?: string };
  /**
   * Runs on every chat and every steer before it is accepted; a refusal answers 422 with its
   * reason. A guard that throws, or has not answered within `guardTimeoutMs`, decides nothing:
   * the input is answered 503 `guard_failed` (logged, counted in `rudder_guard_failures_total`)
   * and the same id sent again is guarded again. The inputs after it, of every conversation on
   * its partition, go on meanwhile.
   */
  guard?: (input: GuardInput) => GuardVerdict | Promise<GuardVerdict>;
  /**
   * The guard's time budget per input, in milliseconds. Default GUARD_TIMEOUT_MS (3000): the
   * partition's next inputs wait for the guards of a batch, so keep it short.
   */
  guardTimeoutMs?: number;
  /**
   * Checks each final answer of Rudder's own loop (a reply with no tool calls; docs/agents.md,
   * "Output guards") before anyone sees it: `'pass'`, `{reask: feedback}` (the model is asked
   * again, told `feedback` and the turn's prompt, at most `maxReasks` times: a step of the turn
   * each), or `{block: message}` (the turn ends `refused`, `message` its outcome and content).
   * Its answers' tokens are held until they pass. A guard that throws, or has not answered within
   * `outputGuardTimeoutMs`, is tried again after 200, 400 and 800 ms; then the turn ends `failed`.
   * A framework's loop (`loop`) does not run it.
   */
  outputGuard?: (answer: string, context: OutputGuardContext) => OutputVerdict | Promise<OutputVerdict>;
  /** How many times one turn asks the model again at most; an answer rejected past them is blocked with a message of Rudder's. Default 2. */
  maxReasks?: number;
  /** The output guard's time budget per answer, in milliseconds. Default OUTPUT_GUARD_TIMEOUT_MS (10000). */
  outputGuardTimeoutMs?: number;
};
