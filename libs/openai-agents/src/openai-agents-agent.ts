import { Runner, setTracingDisabled, type Agent, type AgentOutputType, type ModelProvider } from '@openai/agents';
import { DurableTurn, type TurnLoop } from '@rudder/agent';
import type { AgentDefinition } from '@rudder/turn-worker';
import { durableAgents, type TeamAgent } from './durable-agents';
import { toInputItems } from './items';

export type OpenAiAgentsLoopOptions<TContext = unknown, TOutput extends AgentOutputType = AgentOutputType> = {
  /** The team's agent, as written: instructions, model, tools, handoffs, guardrails. */
  agent: Agent<TContext, TOutput>;
  /** Resolves the agents whose model is a name (or unset). Default: the framework's `OpenAIProvider` (its API as `setOpenAIAPI` chose). */
  modelProvider?: ModelProvider;
  /** The run context the agent's tools and guardrails get, made for each run of a turn. Default: none. */
  context?: (turn: { conversation: string; turn: string }) => TContext;
};

/**
 * A turn loop that runs an OpenAI Agents SDK agent (`@openai/agents`) through a `DurableTurn`:
 * its model requests are the turn's steps (steers taken at its own step, before its next request),
 * its function tools the turn's durable calls, its approvals Rudder's parked approvals, and the
 * worker's stop its run's abort signal.
 */
export function openAiAgentsLoop<TContext, TOutput extends AgentOutputType>(options: OpenAiAgentsLoopOptions<TContext, TOutput>): TurnLoop {
  // The adapter reads no context and no output of the agent's: one type for every agent.
  const team = options.agent as unknown as TeamAgent;
  // Nothing of a run may call out: the framework's tracing exports to OpenAI by default.
  setTracingDisabled(true);
  return (run) => {
    const durable = new DurableTurn(run);
    const known = new Map<string, string>();
    // An agent used as a tool with a model named by a string finds it where the team's agents do.
    const runner = new Runner({ tracingDisabled: true, ...(options.modelProvider ? { modelProvider: options.modelProvider } : {}) });
    let current: TeamAgent | undefined;
    return durable.run(async (input) => {
      current ??= await durableAgents(team, durable, known, options.modelProvider);
      // Its input guardrails judged the prompt when the turn began: a resumed run or a
      // continuation (the turn so far, steered messages included) is not judged again.
      const agent = durable.turn.steps > 0 ? current.clone({ inputGuardrails: [] }) : current;
      const result = await runner.run(agent, toInputItems(input), {
        signal: durable.signal,
        // Rudder's own step limit (`maxSteps`) ends the turn first.
        maxTurns: run.agent.maxSteps + 1,
        context: options.context?.({ conversation: run.conversation, turn: run.turn.id }),
      });
      // The turn's own tools never interrupt (Rudder parks them); a tool of an agent used as a
      // tool runs in the framework's nested run, whose approvals Rudder cannot park.
      if (result.interruptions.length > 0) {
        throw new Error(`a nested agent's tool asked for approval, which Rudder cannot park: ${result.interruptions.map((i) => i.name ?? i.type).join(', ')}`);
      }
      // A continuation answers from the agent that gave the final answer (after a handoff, the new one).
      current = result.lastAgent ?? current;
    });
  };
}

export type OpenAiAgentsAgentOptions<TContext = unknown, TOutput extends AgentOutputType = AgentOutputType> = OpenAiAgentsLoopOptions<TContext, TOutput> &
  Pick<AgentDefinition, 'name' | 'steering' | 'bounds' | 'guard' | 'guardTimeoutMs' | 'history' | 'maxSteps' | 'affordances'>;

/** An OpenAI Agents SDK agent as a Rudder agent: list it in `TurnWorkerModule.forRoot({ agents })`. */
export function openAiAgentsAgent<TContext, TOutput extends AgentOutputType>({ agent, modelProvider, context, ...settings }: OpenAiAgentsAgentOptions<TContext, TOutput>): AgentDefinition {
  return { ...settings, instructions: '', loop: openAiAgentsLoop({ agent, modelProvider, context }) };
}
