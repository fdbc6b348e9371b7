import type { TurnState } from './turn';
import type { RunTurnOptions, Agent } from './run-options';
import { planMessage, todosTool } from './todos';
import type { Tool } from './tools';

/** The tools with the built-in `todos` added, one array per list of tools: their token count is kept by array (tokens.ts). */
const withTodos = new WeakMap<readonly Tool[], readonly Tool[]>();

/** The tools a model request offers: the agent's, and the built-in `todos` when it keeps a plan. */
export function offeredTools(agent: Agent): readonly Tool[] {
  if (!agent.todos) return agent.tools;
  let offered = withTodos.get(agent.tools);
  if (!offered) withTodos.set(agent.tools, (offered = [...agent.tools, todosTool]));
  return offered;
}

/** What a request of the turn carries: the tools offered, and its parts (`fitRequest` makes the request of them). */
export function requestParts(turn: TurnState, options: RunTurnOptions) {
  const { agent } = options;
  const tools = offeredTools(agent);
  const plan = agent.todos ? planMessage(turn.todos.items) : null;
  return { tools, parts: { systemPrompt: agent.systemPrompt, plan, tools, ...options.history(), turn: turn.messages } };
}
