import type { ConversationEvent, InputRecord } from '@rudder/contracts';
import type { ForkSource } from '@rudder/conversation';
import { readConversation } from '@rudder/event-store';
import type { Pool, Sharded } from '@rudder/runtime';
import { emptyConversation, evolveConversation, type Conversation } from '../turns/conversation';

type ForkInput = Extract<InputRecord, { type: 'fork' }>;

/**
 * The sources of a batch's forks, read from the event store just before their decisions (a
 * fork is decided under its new conversation's lock; the source is another conversation, maybe
 * another partition's, and is only read, on the primary of its key's partition): by the fork's
 * conversation and id. A source with an empty log is absent.
 */
export async function readForkSources(pools: Pick<Sharded<Pool>, 'forKey'>, inputs: readonly InputRecord[], historyKept: number | null): Promise<Map<string, ForkSource>> {
  const sources = new Map<string, ForkSource>();
  for (const input of inputs) {
    if (input.type !== 'fork') continue;
    const events = await readConversation(pools.forKey(input.from), input.from, 0);
    if (events.length > 0) sources.set(forkKey(input), forkSourceOf(input, events, historyKept));
  }
  return sources;
}

/** A fork's key among a batch's: ids are the client's, two conversations may share one. */
export const forkKey = (input: Pick<InputRecord, 'conversation' | 'id'>): string => `${input.conversation}\u0000${input.id}`;

/**
 * The source as a fork sees it: its state now, and its history as the worker's fold held it
 * when `atTurn` ended (absent: the latest turn that ended and was not rolled back) — what a
 * model request made then carried: the summary and the earlier turns after it — or why there
 * is none. The log is folded with the fold the turns run on (`evolveConversation`), so a fork
 * of a fork, a compaction or a rollback before the turn are read as every later request reads them.
 */
export function forkSourceOf(input: Pick<ForkInput, 'from' | 'atTurn'>, events: readonly ConversationEvent[], historyKept: number | null): ForkSource {
  let fold = emptyConversation(historyKept);
  // The fold as each turn that ended (and was not rolled back since) left it, in the order they ended.
  const ended = new Map<string, { fold: Conversation; through: number }>();
  for (const event of events) {
    const running = fold.running;
    fold = evolveConversation(fold, event);
    if (event.type === 'turn.ended' && running?.id === event.data.turn && running.ending !== 'rollback') ended.set(running.id, { fold, through: event.position });
    if (event.type === 'turns.rolledBack') for (const turn of event.data.turns) ended.delete(turn);
  }
  const { state } = fold;
  const atTurn = input.atTurn ?? [...ended.keys()].at(-1);
  if (atTurn === undefined) return { state, copy: { refusal: 'not_found', message: `conversation ${input.from} has no turn that ended` } };
  const at = ended.get(atTurn);
  if (at === undefined) {
    return state.runningTurn === atTurn
      ? { state, copy: { refusal: 'busy', message: `turn ${atTurn} of ${input.from} is still running: fork at a turn that ended` } }
      : { state, copy: { refusal: 'not_found', message: `turn ${atTurn} is not a turn of ${input.from} that ended and was not rolled back` } };
  }
  const { history, summary } = at.fold;
  return {
    state,
    copy: {
      from: input.from,
      atTurn,
      through: at.through,
      history: history.map(({ turn, end, messages, tokens }) => ({
        turn,
        end,
        // An earlier turn holds its prompt, its steered messages (user) and its replies (assistant) only.
        messages: messages.flatMap((m) => (m.role === 'user' || m.role === 'assistant' ? [{ role: m.role, content: m.content }] : [])),
        ...(tokens === undefined ? {} : { tokens }),
      })),
      summary,
      todos: at.fold.state.todos,
      agent: at.fold.state.agent,
    },
  };
}
