/**
 * `@rudder/agent/testing`: a turn's options on a store in memory, for tests of a loop (Rudder's
 * own or a framework adapter's) without the worker. The store takes the waiting steers as the
 * conversation's decider does: at the commit that closes a step (every call has its result, or
 * a rejected answer asks again), or in place of the end a final answer proposes — the turn then
 * takes one more step.
 */
import type { DomainEvent } from '@rudder/contracts';
import { contextBudget } from './context';
import type { ModelMessage } from './messages';
import type { Agent, RunTurnOptions, StoredTurn } from './run-options';
import { evolveTurn, startTurn, type TurnState } from './turn';

export const TEST_PROMPT = { id: 'in-1', text: 'check the build', messages: ['check the build'], subject: 'alice' };

export const testAgent = (settings: Partial<Agent> = {}): Agent => ({ systemPrompt: '', tools: [], maxSteps: 8, context: contextBudget({ maxTokens: 100_000 }), todos: false, ...settings });

export type MemoryTurn = {
  options: RunTurnOptions;
  /** Every event stored, in order. */
  log: DomainEvent[];
  /** Steers waiting for the turn's next step: push to steer it. */
  steers: { id: string; text: string }[];
  /** The turn as stored now. */
  turn(): TurnState;
  /** The tokens streamed so far (`onToken`), in order. */
  tokens: string[];
};

export function memoryTurn(
  settings: { turn?: TurnState; steers?: { id: string; text: string }[]; agent?: Agent; signal?: AbortSignal; earlier?: readonly ModelMessage[][] } = {},
): MemoryTurn {
  const log: DomainEvent[] = [];
  const tokens: string[] = [];
  const steers = settings.steers ?? [];
  let turn = settings.turn ?? startTurn('t1', TEST_PROMPT);
  const commit = async (events: DomainEvent[]): Promise<StoredTurn> => {
    const after = events.reduce(evolveTurn, turn);
    const closesStep = (events.some((e) => e.type === 'tool.ended') && after.openCalls.length === 0) || events.some((e) => e.type === 'answer.rejected' && e.data.reask !== null);
    const completes = events.some((e) => e.type === 'turn.ended' && e.data.status === 'completed');
    let stored = events;
    if ((closesStep || completes) && steers.length > 0) {
      const taken = steers.splice(0).map((input): DomainEvent => ({ type: 'steer.taken', data: { turn: turn.id, step: after.steps, input } }));
      stored = [...events.filter((e) => e.type !== 'turn.ended'), ...taken];
    }
    log.push(...stored);
    turn = stored.reduce(evolveTurn, turn);
    return { turn, ended: stored.some((e) => e.type === 'turn.ended') };
  };
  const options: RunTurnOptions = {
    conversation: 'c',
    agent: settings.agent ?? testAgent(),
    model: { reply: () => Promise.reject(new Error('a framework asks its own model')) },
    history: () => ({ summary: null, earlier: (settings.earlier ?? []).map((messages) => ({ messages })) }),
    turn,
    commit,
    onToken: (_step, text) => tokens.push(text),
    now: () => new Date('2026-12-01T00:00:00Z'),
    signal: settings.signal ?? new AbortController().signal,
  };
  return { options, log, steers, turn: () => turn, tokens };
}

/** The log up to and including the first event of `type` (a worker that died right after storing it). */
export const logUpTo = (log: readonly DomainEvent[], type: DomainEvent['type']): DomainEvent[] => log.slice(0, log.findIndex((e) => e.type === type) + 1);

/** The turn a log up to some point folds to. */
export const turnOf = (log: readonly DomainEvent[]): TurnState => log.reduce(evolveTurn, startTurn('t1', TEST_PROMPT));
