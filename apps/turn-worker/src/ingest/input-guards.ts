import { randomUUID } from 'node:crypto';
import type { InputRecord } from '@rudder/contracts';
import { conversationRules, guardedOf, initialState, INPUT_KINDS, type GuardOutcome } from '@rudder/conversation';
import { readStates } from '@rudder/event-store';
import type { Pool } from '@rudder/runtime';
import type { GuardInput } from '../agents/agent-definition';
import type { RunnableAgent } from '../agents/agents';
import type { IngestAgents } from './ingest-inputs';
import { cut } from './parse-input';

/** A guard that threw or ran past its time budget on one input: the caller logs and counts it. */
export type GuardFailure = { conversation: string; input: string; agent: string; reason: 'error' | 'timeout'; error: string };

/** An input among a batch's per-input facts: its conversation and its id, never its id alone. */
export const inputKey = (input: Pick<InputRecord, 'conversation' | 'id'>) => JSON.stringify([input.conversation, input.id]);

/**
 * Runs the input guards of a batch's inputs of the kinds that are guarded (a kind's `guarded`
 * in @rudder/conversation: chats and steers), each on the text its kind gives, with the agent
 * that will answer it: the conversation's (its first input's, or the one its last handoff chose), else the one its
 * chat names, else the default. Reads the conversations' states only when some agent has a
 * guard. Answers what they said by `inputKey`; an id that comes twice in a conversation's batch
 * is guarded once (the decider answers its second record by the first's decision).
 */
export async function runGuards(
  pool: Pool,
  inputs: readonly InputRecord[],
  agents: IngestAgents,
  guardFailed: (failure: GuardFailure) => void,
): Promise<Map<string, GuardOutcome>> {
  const outcomes = new Map<string, GuardOutcome>();
  const guarded = inputs.filter((i) => INPUT_KINDS[i.type].guarded !== undefined);
  if (guarded.length === 0 || !agents.anyGuard()) return outcomes;
  const states = await readStates(pool, conversationRules, [...new Set(guarded.map((i) => i.conversation))]);
  const chosen = new Map([...states].map(([key, state]) => [key, state.agent]));
  const firsts = new Map<string, (typeof guarded)[number]>();
  for (const input of guarded) if (!firsts.has(inputKey(input))) firsts.set(inputKey(input), input);
  await Promise.all(
    [...firsts].map(async ([key, input]) => {
      const checked = guardedOf(states.get(input.conversation) ?? initialState(), input);
      if (checked === null) return;
      const agent = agents.get(chosen.get(input.conversation) ?? checked.agent ?? null);
      if (!agent) return;
      if (!chosen.get(input.conversation)) chosen.set(input.conversation, agent.name);
      const verdict = await withinBudget(agent, { conversation: input.conversation, kind: checked.kind, text: checked.text, subject: input.subject });
      if ('failed' in verdict) {
        guardFailed({ conversation: input.conversation, input: input.id, agent: agent.name, reason: verdict.failed, error: verdict.error });
        const why = verdict.failed === 'timeout' ? `did not answer within ${agent.guardTimeoutMs} ms` : 'failed';
        outcomes.set(key, {
          failed: `the input guard of agent ${agent.name} ${why}, so nothing was decided; send it again with the same id, and it is guarded again`,
          attempt: randomUUID(),
        });
      } else if (verdict.refuse !== undefined) outcomes.set(key, { refuse: verdict.refuse });
    }),
  );
  return outcomes;
}

/** An agent's guard on one input, given its time budget: its verdict, or how it failed (its own error, for the log only). */
async function withinBudget(
  agent: Pick<RunnableAgent, 'guard' | 'guardTimeoutMs'>,
  input: Omit<GuardInput, 'signal'>,
): Promise<{ refuse?: string } | { failed: 'error' | 'timeout'; error: string }> {
  const budget = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const spent = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), agent.guardTimeoutMs);
  });
  try {
    const verdict = await Promise.race([agent.guard({ ...input, signal: budget.signal }), spent]);
    if (verdict !== 'timeout') return verdict ?? {};
    budget.abort(new Error(`the guard's time budget (${agent.guardTimeoutMs} ms) is spent`));
    return { failed: 'timeout', error: `no verdict within ${agent.guardTimeoutMs} ms` };
  } catch (error) {
    return { failed: 'error', error: cut(String(error instanceof Error ? (error.stack ?? error.message) : error), 2000) };
  } finally {
    clearTimeout(timer);
  }
}
