import { setTimeout as sleep } from 'node:timers/promises';
import type { TurnState } from './turn';

/**
 * What an output guard sees with an answer: the conversation, the turn, the turn's prompt (its
 * text: what the person asked, never a message steered to the turn) and its subject. `signal` is
 * aborted once the guard's time budget is spent, or when the turn is: a guard that calls out
 * should pass it on.
 */
export type OutputGuardContext = { conversation: string; turn: string; prompt: string; subject: string; signal: AbortSignal };

/**
 * An output guard's verdict on a final answer: `pass` (it is stored and shown), `{reask: feedback}`
 * (the model is asked again, told `feedback`), or `{block: message}` (the turn ends `refused`,
 * `message` its outcome and content).
 */
export type OutputVerdict = 'pass' | { reask: string } | { block: string };

/** An agent's output guard as the loop runs it on each final answer (a reply with no tool calls). */
export type OutputGuard = {
  check(answer: string, context: OutputGuardContext): OutputVerdict | Promise<OutputVerdict>;
  /** How many times one turn asks the model again at most: an answer rejected past them is blocked (`REASKS_SPENT`). */
  maxReasks: number;
  /** A check's time budget, in milliseconds: past it, the check failed. */
  timeoutMs: number;
  /** The waits before each retry of a check that failed (it threw, ran past its budget, or answered no verdict); after the last retry fails, the turn fails. */
  retryDelaysMs: readonly number[];
};

/** The block message of an answer the guard still rejected after the turn's `maxReasks` re-asks. */
export const REASKS_SPENT = "the answer did not pass the agent's output guard";

/**
 * The guard's verdict on `answer`, each failed check retried after its delay; when every try
 * failed, `{failed}` says so (the last try's error). An aborted turn ends the wait by throwing.
 */
export async function checkAnswer(
  guard: OutputGuard,
  answer: string,
  about: { conversation: string; turn: TurnState; signal: AbortSignal },
): Promise<OutputVerdict | { failed: string }> {
  const { conversation, turn, signal } = about;
  const context = { conversation, turn: turn.id, prompt: turn.prompt.text, subject: turn.prompt.subject };
  for (let attempt = 0; ; attempt++) {
    try {
      return await withinBudget(guard, answer, context, signal);
    } catch (error) {
      signal.throwIfAborted();
      const delay = guard.retryDelaysMs[attempt];
      if (delay === undefined) return { failed: `the output guard failed ${attempt + 1} times, the last: ${describe(error)}` };
      await sleep(delay, undefined, { signal });
    }
  }
}

/** One check within the guard's time budget: its verdict, or a rejection (it threw, ran past the budget, or answered no verdict). */
async function withinBudget(guard: OutputGuard, answer: string, context: Omit<OutputGuardContext, 'signal'>, turnSignal: AbortSignal): Promise<OutputVerdict> {
  const budget = new AbortController();
  const signal = AbortSignal.any([turnSignal, budget.signal]);
  // A guard that ignores its signal is not waited for past its budget, nor once the turn is stopped.
  const spent = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
  const timer = setTimeout(() => budget.abort(new Error(`no verdict within ${guard.timeoutMs} ms`)), guard.timeoutMs);
  try {
    const verdict: unknown = await Promise.race([(async () => guard.check(answer, { ...context, signal }))(), spent]);
    if (isVerdict(verdict)) return verdict;
    throw new Error(`it answered ${JSON.stringify(verdict) ?? String(verdict)}, not 'pass', {reask} or {block}`);
  } finally {
    clearTimeout(timer);
  }
}

const isVerdict = (v: unknown): v is OutputVerdict =>
  v === 'pass' || (typeof v === 'object' && v !== null && (typeof (v as { reask?: unknown }).reask === 'string' || typeof (v as { block?: unknown }).block === 'string'));

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
