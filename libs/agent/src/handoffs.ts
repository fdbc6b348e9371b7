import { z } from 'zod';
import type { DomainEvent, ToolCall } from '@rudder/contracts';
import type { ModelMessage } from './messages';
import type { Tool } from './tools';
import type { TurnState } from './turn';

/**
 * Handoffs (docs/agents.md, "Handoffs"): an agent lists the agents it may hand the conversation
 * to, and its model gets a built-in tool per target, `transfer_to_<name>`. The loop makes a
 * call of it at the call's commit: its result and `agent.changed` are stored together, and the
 * run ends after the step; the runner runs the rest of the turn with the agent the state names.
 */

/** An agent the conversation may be handed to, as the model is offered it. */
export type HandoffTarget = {
  /** The agent's name. */
  agent: string;
  /** What the model is told of it (the tool's description). */
  description?: string;
};

/**
 * What a request of the agent that took the conversation by a handoff carries, for the rest of
 * the turn the handoff happened in: given the request's messages after its instructions (the
 * summary, the plan, the earlier turns, the running turn), it answers the messages to send.
 * It may drop history, never a call's output: the request builder keeps each kept call's
 * result right after it, and drops a call whose result is nowhere (`withEveryOutput`).
 */
export type HandoffFilter = (input: { messages: readonly ModelMessage[]; from: string; to: string; conversation: string }) => ModelMessage[];

/** The prefix of every transfer tool's name. */
export const TRANSFER_PREFIX = 'transfer_to_';

/** The built-in tool that hands the conversation to `agent`: its name holds what a function name may (letters, digits, `_`, `-`). */
export const transferToolName = (agent: string): string => `${TRANSFER_PREFIX}${agent.replace(/[^A-Za-z0-9_-]/g, '_')}`;

/** What a call of a transfer tool answers when it hands the conversation on. */
export const transferredResult = (to: string): string => `transferred to ${to}`;

/** What a later transfer call of the same reply answers: the first one of a reply wins. */
export const alreadyTransferredResult = (to: string): string => `not transferred: this reply already transferred the conversation to ${to}`;

const NO_ARGUMENTS = z.object({});

/** The tool as the model sees it; the loop makes its calls itself, at their commit (`handOff`): `run` is never called. */
export const transferTool = (target: HandoffTarget): Tool => ({
  name: transferToolName(target.agent),
  description: target.description ?? `Hands this conversation to the agent ${target.agent}: it answers from here on.`,
  parameters: NO_ARGUMENTS,
  run: () => Promise.reject(new Error('a transfer tool is run by the agent loop, at the commit of its result')),
});

/** The target whose transfer tool `call` calls, among the agent's; undefined for any other call. */
export const handoffOf = (targets: readonly HandoffTarget[] | undefined, call: ToolCall): HandoffTarget | undefined =>
  call.name.startsWith(TRANSFER_PREFIX) ? targets?.find((t) => transferToolName(t.agent) === call.name) : undefined;

/**
 * What a transfer call stores at its commit, from the turn as the commits before it left it:
 * its result and `agent.changed`; or, when a call of the same reply already handed the
 * conversation on, only a result that says so.
 */
export function handOff(turn: TurnState, step: number, call: ToolCall, from: string, target: HandoffTarget): DomainEvent[] {
  const ended = (result: string, isError: boolean): DomainEvent => ({ type: 'tool.ended', data: { turn: turn.id, step, callId: call.id, name: call.name, result, isError } });
  if (turn.handoff?.step === step) return [ended(alreadyTransferredResult(turn.handoff.to), true)];
  return [ended(transferredResult(target.agent), false), { type: 'agent.changed', data: { from, to: target.agent, turn: turn.id, step } }];
}

/**
 * Whether the turn was handed to another agent than `agent` and the step that handed it on has
 * every result: the run ends there (the runner runs the rest of the turn with the agent the
 * conversation names now).
 */
export const handedOff = (turn: TurnState, agent: { name?: string }): boolean => turn.handoff !== null && turn.handoff.to !== agent.name && turn.openCalls.length === 0;

/**
 * The agent that runs the turn now: the conversation's (`agent`, the state's), but while calls
 * of the reply that handed it on are open (waiting for approval, or cut short by a crash) the
 * agent that made them, whose tools they are; it ends its run once they have their results.
 */
export const runningAgent = (turn: TurnState, agent: string | null): string | null =>
  turn.handoff !== null && turn.handoff.step === turn.steps - 1 && turn.openCalls.length > 0 ? turn.handoff.from : agent;

/**
 * The messages as a request may send them: every kept call of an assistant message right
 * after it, with its result (the one `kept` has, else the one `original` has), then whatever
 * else was kept; a call whose result is in neither is dropped (its message too, when it says
 * nothing else), and a result whose call was not kept is dropped. A request never holds a call
 * without its output, nor an output without its call, whatever a filter made of the messages.
 */
export function withEveryOutput(kept: readonly ModelMessage[], original: readonly ModelMessage[]): ModelMessage[] {
  const resultOf = new Map<string, ModelMessage>();
  for (const m of original) if (m.role === 'tool') resultOf.set(m.tool_call_id, m);
  for (const m of kept) if (m.role === 'tool') resultOf.set(m.tool_call_id, m);
  const sent: ModelMessage[] = [];
  for (const message of kept) {
    if (message.role === 'tool') continue; // each goes right after its call, below
    if (message.role !== 'assistant' || !message.tool_calls?.length) {
      sent.push(message);
      continue;
    }
    const calls = message.tool_calls.filter((c) => resultOf.has(c.id));
    if (calls.length === 0 && message.content.trim() === '') continue;
    sent.push(calls.length === message.tool_calls.length ? message : calls.length > 0 ? { ...message, tool_calls: calls } : { role: 'assistant', content: message.content });
    for (const call of calls) sent.push(resultOf.get(call.id)!);
  }
  return sent;
}
