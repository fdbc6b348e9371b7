import type { TurnState } from './turn';
import type { RunTurnOptions, Agent } from './run-options';
import { fitRequest, type FittedRequest, type RequestParts } from './context';
import { transferTool, withEveryOutput } from './handoffs';
import { scheduleTool } from './schedules';
import { planMessage, todosTool } from './todos';
import type { Tool } from './tools';

/** The tools offered with each list of tools (by array: their token count is kept by array, tokens.ts), for the agent they were made for. */
const offeredWith = new WeakMap<readonly Tool[], { agent: Agent; offered: readonly Tool[] }>();

/**
 * The tools a model request offers: the agent's, the built-in `todos` when it keeps a plan, the
 * built-in `schedule` when it makes schedules, and a built-in `transfer_to_<name>` for each agent
 * it may hand the conversation to.
 */
export function offeredTools(agent: Agent): readonly Tool[] {
  if (!agent.todos && !agent.schedules && !agent.handoffs?.length) return agent.tools;
  const made = offeredWith.get(agent.tools);
  if (made && made.agent.todos === agent.todos && made.agent.schedules === agent.schedules && made.agent.handoffs === agent.handoffs) return made.offered;
  const offered = [...agent.tools, ...(agent.todos ? [todosTool] : []), ...(agent.schedules ? [scheduleTool] : []), ...(agent.handoffs ?? []).map(transferTool)];
  offeredWith.set(agent.tools, { agent, offered });
  return offered;
}

/** What a request of the turn carries: the tools offered, and its parts (`sentRequest` makes the request of them). */
export function requestParts(turn: TurnState, options: RunTurnOptions) {
  const { agent } = options;
  const tools = offeredTools(agent);
  const plan = agent.todos ? planMessage(turn.todos.items) : null;
  return { tools, parts: { systemPrompt: agent.systemPrompt, plan, tools, ...options.history(), turn: turn.messages } };
}

/**
 * The request a step sends (`fitRequest`), through the filter of the handoff that gave its agent
 * the turn, when there is one: the filter gets every message after the instructions, and what
 * it answers is sent with every kept call's output (`withEveryOutput`) — the one place a request
 * is kept from holding a call without its output, whatever the filter dropped.
 */
export function sentRequest(turn: TurnState, parts: RequestParts, options: RunTurnOptions): FittedRequest {
  const { agent } = options;
  const request = fitRequest(parts, agent.context);
  const handoff = turn.handoff;
  if (!request.fits || !agent.filter || handoff === null) return request;
  const [instructions, ...rest] = request.messages;
  const kept = agent.filter({ messages: rest, from: handoff.from, to: handoff.to, conversation: options.conversation });
  return { ...request, messages: [instructions, ...withEveryOutput(kept, rest)] };
}
