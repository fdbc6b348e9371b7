import { AsyncLocalStorage } from 'node:async_hooks';
import { ToolMessage } from '@langchain/core/messages';
import { isCommand } from '@langchain/langgraph';
import { createAgent, createMiddleware, type AgentMiddleware, type InterruptOnConfig, type ReactAgent } from 'langchain';
import { DurableTurn, type TurnLoop } from '@rudder/agent';
import type { AgentDefinition } from '@rudder/turn-worker';
import { parseArguments, resultsOf, toAIMessage, toLangChain, toModelReply, withSteers } from './messages';
import { TokenSink } from './tokens';

/** Rudder's own settings of an agent a framework runs (AgentDefinition's, less what the framework has itself). */
export type RudderSettings = Pick<AgentDefinition, 'steering' | 'bounds' | 'guard' | 'guardTimeoutMs' | 'history' | 'maxSteps' | 'affordances'>;

/** The `interruptOn` a team gives `humanInTheLoopMiddleware`: per tool, whether (or when) a call of it waits for a person. */
export type InterruptOn = Record<string, boolean | InterruptOnConfig>;

export type LangGraphAgentOptions = RudderSettings & {
  name: string;
  /** The team's agent, as `createAgent({ model, tools, middleware, systemPrompt })` made it. */
  agent: ReactAgent;
  /**
   * The `interruptOn` of the agent's `humanInTheLoopMiddleware`, which keeps it to itself: its
   * calls park as Rudder's approvals instead of interrupting the graph (the middleware is
   * left out of the agent Rudder runs). Required when the agent has that middleware.
   */
  interruptOn?: InterruptOn;
  /** How long a call waits for a decision before it is denied as timed out, in milliseconds. Default: no limit. */
  approvalTimeout?: number;
};

const HITL = 'HumanInTheLoopMiddleware';

/**
 * A LangGraph.js agent (`createAgent` of `langchain`) behind Rudder: its turns run the team's
 * agent — its model, tools, system prompt and middleware — with two middlewares of Rudder's
 * added (`durableTurnLoop`), so each of its model requests and tool calls is a step of the
 * conversation's log and steers reach its model at its own step.
 */
export function langGraphAgent({ name, agent, interruptOn, approvalTimeout, ...settings }: LangGraphAgentOptions): AgentDefinition {
  const middleware = (agent.options.middleware ?? []) as readonly AgentMiddleware[];
  if (middleware.some((m) => m.name === HITL) && interruptOn === undefined) {
    throw new Error(`langGraphAgent ${name}: its agent has ${HITL}: give its interruptOn here too, so its calls wait as Rudder's approvals`);
  }
  return { name, instructions: '', loop: durableTurnLoop(agent, { interruptOn: interruptOn ?? {}, approvalTimeout }), ...settings };
}

/**
 * The loop: the team's agent, made again once with Rudder's middlewares around its own, invoked
 * by each run of a turn from the turn's input with the run's abort signal; the middlewares find
 * that run's DurableTurn in the async context of its invoke (nested agents, made by the team,
 * have no Rudder middleware).
 *
 * - `RudderTools` is the first middleware, so it wraps the team's own tool middleware (a retry,
 *   say) and stores what they make of the call: `durable.tool`, approvals from `interruptOn`.
 * - `RudderModel` is the last, nearest the model: what the team's middleware made of the
 *   request (a trimmed history, another system prompt) is what gets the steers, and a stored
 *   reply is answered to them as the model's.
 */
export function durableTurnLoop(agent: ReactAgent, options: { interruptOn: InterruptOn; approvalTimeout?: number }): TurnLoop {
  const own = ((agent.options.middleware ?? []) as readonly AgentMiddleware[]).filter((m) => m.name !== HITL);
  // The agent Rudder runs is made once (making one compiles its graph); each turn's run finds its
  // DurableTurn and token sink in the async context the run's invoke is called in.
  const turns = new AsyncLocalStorage<{ durable: DurableTurn; tokens: TokenSink }>();
  const turn = () => {
    const current = turns.getStore();
    if (!current) throw new Error('a Rudder middleware ran outside a Rudder turn');
    return current;
  };
  const model = createMiddleware({
    name: 'RudderModel',
    wrapModelCall: async (request, handler) => {
      const { durable, tokens } = turn();
      const reply = await durable.model(async (ask) => {
        const messages = withSteers(request.messages, ask.steers);
        const answer = await tokens.during(ask.onToken, async () => handler({ ...request, messages }));
        return toModelReply(answer);
      }, resultsOf(request.state.messages));
      return toAIMessage(reply);
    },
  });
  const tools = createMiddleware({
    name: 'RudderTools',
    wrapToolCall: async (request, handler) => {
      const { durable } = turn();
      const { toolCall } = request;
      const call = { id: toolCall.id ?? '', name: toolCall.name, arguments: JSON.stringify(toolCall.args) };
      let made: Awaited<ReturnType<typeof handler>> | undefined;
      try {
        const result = await durable.tool(
          call,
          async (args) => {
            made = await handler({ ...request, toolCall: { ...toolCall, args: parseArguments(args) } });
            return resultText(made);
          },
          { needsApproval: await needsApproval(options.interruptOn[call.name], request), approvalTimeout: options.approvalTimeout },
        );
        // A Command (a state update of the tool's) goes back as it was made; a stored result as the text the log holds.
        return made !== undefined && isCommand(made) ? made : new ToolMessage({ content: result, tool_call_id: call.id, name: call.name });
      } catch (error) {
        if (durable.signal.aborted) throw error;
        // Stored as the call's error result: the model reads it, as LangGraph's ToolNode gives it without middleware.
        return new ToolMessage({ content: error instanceof Error ? error.message : String(error), tool_call_id: call.id, name: call.name, status: 'error' });
      }
    },
  });
  const runnable = createAgent({ ...agent.options, middleware: [tools, ...own, model] } as Parameters<typeof createAgent>[0]);
  return (runOptions) => {
    const durable = new DurableTurn(runOptions);
    const tokens = new TokenSink();
    return turns.run({ durable, tokens }, () =>
      durable.run(async (input) => {
        await runnable.invoke({ messages: toLangChain(input) }, { signal: durable.signal, callbacks: [tokens], recursionLimit: RECURSION_LIMIT });
      }),
    );
  };
}

/** Rudder's step limit (`maxSteps`) ends a turn; LangGraph's own (25 graph steps by default) should not come first. */
const RECURSION_LIMIT = 10_000;

/** Whether a call waits for a person, as `humanInTheLoopMiddleware` decides it: `true`, or a config whose `when` (if any) says so. */
async function needsApproval(config: boolean | InterruptOnConfig | undefined, request: Parameters<NonNullable<InterruptOnConfig['when']>>[0]): Promise<boolean> {
  if (config === undefined || config === false) return false;
  if (config === true) return true;
  return config.when ? Boolean(await config.when(request)) : true;
}

/** A tool's result as the log stores it: a ToolMessage's text, or that of the ToolMessage a Command adds. */
function resultText(made: ToolMessage | { update?: unknown }): string {
  if (ToolMessage.isInstance(made)) return made.text;
  const update = made.update as { messages?: unknown[] } | undefined;
  const message = update?.messages?.find((m): m is ToolMessage => ToolMessage.isInstance(m));
  return message?.text ?? '';
}
