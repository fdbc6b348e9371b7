import type { LanguageModelV3 } from '@ai-sdk/provider';
import { ToolLoopAgent, type ToolLoopAgentSettings, type ToolSet } from 'ai';
import { DurableTurn, type RunTurnOptions, type TurnState } from '@rudder/agent';
import type { AgentDefinition } from '@rudder/turn-worker';
import { durableModel } from './durable-model';
import { durableTools } from './durable-tools';
import { toAiMessages } from './messages';

/** Settings of an AI SDK agent: a `ToolLoopAgent`'s (with `system` accepted for `instructions`, as `generateText` users write it). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the team's own agent, whatever its tools, call options and output
export type AiSdkAgentSettings = ToolLoopAgentSettings<never, ToolSet, any> & { system?: ToolLoopAgentSettings['instructions'] };

/** Rudder's own settings of an agent, besides the framework's (`AgentDefinition`). */
export type RudderSettings = Omit<AgentDefinition, 'name' | 'instructions' | 'loop' | 'model' | 'tools' | 'mcp' | 'todos' | 'schedules' | 'context'>;

/**
 * An agent written with Vercel's AI SDK (`ai` 6), run behind Rudder unchanged: a
 * `ToolLoopAgent` of the team's, or the settings it passes to `generateText` (model, tools,
 * `system`, `stopWhen`, `prepareStep`…). List what this answers among the worker's agents
 * (`TurnWorkerModule.forRoot({ agents: [...] })`) as any agent.
 *
 * Each turn runs the agent's own loop (`ToolLoopAgent.generate`) with its model and tools made
 * durable (`durableModel`, `durableTools`): every model request is a step of the log, answered
 * from it when stored, and takes the turn's steers; every tool result is stored once; a tool's
 * `needsApproval` parks the turn as Rudder's approvals do. See README.md.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the team's own agent, whatever its call options, tools and output
export function aiSdkAgent(definition: { name: string; agent: ToolLoopAgent<any, any, any> | AiSdkAgentSettings } & RudderSettings): AgentDefinition {
  const { agent, ...rudder } = definition;
  const settings = settingsOf(agent);
  const { model } = settings;
  // `v3`: the providers of `ai` 6; `v4`: those of `ai` 7, whose model calls have the same shape where the adapter reads them.
  if (typeof model === 'string' || !['v3', 'v4'].includes(model.specificationVersion)) {
    throw new Error(`aiSdkAgent ${definition.name}: give its model as an AI SDK 6 or 7 provider's model object (openai.chat('gpt-4o'), say), not a gateway id or an older provider's`);
  }
  return { ...rudder, instructions: '', loop: (options) => runTurn(settings, model as LanguageModelV3, options) };
}

/** One run of the turn: the agent's loop on a durable model and durable tools, from the turn's input (`DurableTurn.run`). */
function runTurn(settings: AiSdkAgentSettings, model: LanguageModelV3, options: RunTurnOptions): Promise<TurnState> {
  const durable = new DurableTurn(options);
  const agent = new ToolLoopAgent({ ...settings, model: durableModel(model, durable), tools: durableTools(settings.tools ?? {}, durable) });
  return durable.run(async (input) => {
    await agent.generate({ messages: toAiMessages(input), abortSignal: durable.signal });
  });
}

/**
 * The settings a team's agent was made with. A `ToolLoopAgent` keeps them on `settings` (ai 6's
 * own field, not part of its typed API: the version range is pinned for it).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
function settingsOf(agent: ToolLoopAgent<any, any, any> | AiSdkAgentSettings): AiSdkAgentSettings {
  if (agent instanceof ToolLoopAgent) return (agent as unknown as { settings: AiSdkAgentSettings }).settings;
  const { system, ...rest } = agent;
  return { ...rest, instructions: rest.instructions ?? system };
}
