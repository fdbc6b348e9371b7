import { isEventOf, ROLLBACK_TURNS_MAX, type DomainEvent, type EventType } from '@rudder/contracts';
import { acceptedMessages, assistantMessage, evolveTurn, knownContentTokens, knownTokens, MESSAGE_FRAMING_TOKENS, startTurn, type EarlierTurn, type ModelMessage, type TurnState } from '@rudder/agent';
import { evolve, initialState, type ConversationState } from '@rudder/conversation';

/**
 * A conversation as the turn runner folds it from its log, in log order: the decisions' state,
 * the running turn as the agent loop drives it, and the history the model sees — earlier
 * turns as their prompts, the messages steered to them, then their answers.
 */
export type Conversation = {
  state: ConversationState;
  running: TurnState | null;
  /**
   * One entry per earlier turn after the summary (if any), oldest first, each its messages (a
   * rolled-back turn has none: no entry) and tokens; the last `historyKept` of them.
   */
  history: HistoryTurn[];
  /** The latest summary of the turns before `history` (`history.compacted`); null before the first compaction. */
  summary: Summary | null;
  /**
   * The position of the `turn.ended` of the newest turn the fold let go of (`historyKept`) while
   * no summary covered it; 0: none. When it is past the summary's `end`, the turns between are
   * in the log only, and a compaction reads them from there.
   */
  letGoThrough: number;
  /**
   * How many earlier turns `history` keeps at most; null: every one. A worker keeps what the
   * largest window of its agents (`history.turns`) needs, so a long conversation's fold, held in
   * memory and stored as its snapshot, stays as small as a short one's.
   */
  historyKept: number | null;
  /**
   * The last turns that ended and were not rolled back, with the position of each one's
   * `turn.ended` (the last `ROLLBACK_TURNS_MAX`: those a rollback can reach), so a rollback
   * knows where the turns it takes back begin, also when the fold let go of them or a summary
   * covers them.
   */
  ends: { turn: string; end: number }[];
};

/** An earlier turn as the fold keeps it: its messages and tokens (`EarlierTurn`), its id and the position of its `turn.ended` (0 when folded without positions). */
export type HistoryTurn = EarlierTurn & { turn: string; end: number; messages: ModelMessage[] };

/** A summary as the fold keeps it: its text, the last turn it covers and the position of that turn's end, how many turns it covers in all. */
export type Summary = { text: string; through: string; end: number; turns: number };

export const emptyConversation = (historyKept: number | null = null): Conversation => ({
  state: initialState(),
  running: null,
  history: [],
  summary: null,
  letGoThrough: 0,
  historyKept,
  ends: [],
});

/**
 * A snapshot's fold made to keep `historyKept` earlier turns; null when it may lack turns that
 * needs (it was folded keeping fewer, and had as many as it kept): read the log from the start
 * instead. A fold that kept more is cut down to `historyKept`.
 */
export function fromSnapshot(fold: Conversation, historyKept: number | null): Conversation | null {
  const kept = fold.historyKept;
  const mayLackTurns = kept !== null && fold.history.length >= kept && (historyKept === null || historyKept > kept);
  if (mayLackTurns) return null;
  return { ...fold, historyKept, ...keptTurns(fold, fold.history, historyKept) };
}

/** The last `turns` of `history` (null: all of them); `history` itself when it has no more. */
const lastTurns = (history: HistoryTurn[], turns: number | null) => (turns === null || history.length <= turns ? history : history.slice(history.length - turns));

/** `history` cut to the last `kept` turns, and where the turns let go of end. */
function keptTurns(conversation: Conversation, history: HistoryTurn[], kept: number | null): Pick<Conversation, 'history' | 'letGoThrough'> {
  const last = lastTurns(history, kept);
  const letGo = history.length - last.length;
  return { history: last, letGoThrough: letGo > 0 ? Math.max(conversation.letGoThrough, history[letGo - 1].end) : conversation.letGoThrough };
}

/**
 * The version of `Conversation` and `evolveConversation`, stored with each snapshot of the fold
 * (event_store.snapshots): raise it whenever either changes, and the snapshots folded by older
 * code are ignored (the log is read from the start).
 */
export const CONVERSATION_FOLD_VERSION = 11;

/**
 * What a model request may carry of the earlier turns: the last `turns` of them (an agent's
 * `history.turns`), oldest first, each whole and apart, so that its budget leaves out whole
 * turns (`fitRequest` in libs/agent); the running turn's own messages come after them.
 */
export function recentHistory(conversation: Conversation, turns: number): HistoryTurn[] {
  return lastTurns(conversation.history, Math.max(0, turns));
}

/** The event types that start, end or shorten what the model sees of the conversation (its running turn, its history). */
const HISTORY_EVENT_TYPES = ['turn.started', 'turn.ended', 'history.compacted', 'turns.rolledBack', 'conversation.forked'] as const satisfies readonly EventType[];

/**
 * Folds one event in. `position`, given by every reader of the log, places the ends of turns,
 * so a summary (`history.compacted`) lets go of exactly the turns it covers.
 */
export function evolveConversation(conversation: Conversation, event: DomainEvent & { position?: number }): Conversation {
  const { state, running, history, historyKept } = conversation;
  const next = evolve(state, event);
  // `history` and `historyKept` go on unchanged but at the end of a turn; any other event is
  // folded into the state and the running turn.
  if (!isEventOf(event, HISTORY_EVENT_TYPES)) return { ...conversation, state: next, running: running ? evolveTurn(running, event) : null };
  switch (event.type) {
    case 'turn.started': {
      const waiting = state.queue.find((p) => p.id === event.data.prompt.id);
      const prompt = {
        ...event.data.prompt,
        messages: waiting?.messages ?? [event.data.prompt.text],
        subject: waiting?.subject ?? state.owner ?? 'anonymous',
        queued: waiting?.queued ?? false,
      };
      return { ...conversation, state: next, running: startTurn(event.data.turn, prompt, state.todos) };
    }
    case 'turn.ended': {
      if (!running || running.id !== event.data.turn) return { ...conversation, state: next };
      // A rolled-back turn leaves no trace in what later turns see.
      if (running.ending === 'rollback') return { ...conversation, state: next, running: null };
      const ended: HistoryTurn = { turn: running.id, end: event.position ?? 0, ...endedTurn(running) };
      const ends = [...conversation.ends, { turn: running.id, end: ended.end }].slice(-ROLLBACK_TURNS_MAX);
      // Copies the list of earlier turns (at most `historyKept` + 1 references), never their messages.
      return { ...conversation, state: next, running: null, ends, ...keptTurns(conversation, [...history, ended], historyKept) };
    }
    case 'history.compacted': {
      const { summary, through, turns } = event.data;
      return {
        ...conversation,
        state: next,
        running: running ? evolveTurn(running, event) : null,
        summary: { text: summary, through: through.turn, end: through.position, turns },
        history: history.filter((t) => t.end > through.position),
      };
    }
    case 'turns.rolledBack':
      return { ...rolledBack(conversation, event.data.turns), state: next, running: running ? evolveTurn(running, event) : null };
    case 'conversation.forked': {
      // A fork starts with the source's history as the source's requests carried it at the fork's turn (its turns' ends are
      // the source's positions, all before the fork's own); they are no `ends`: a rollback in the fork reaches its own turns only.
      const { history: copied, summary } = event.data;
      return { ...conversation, state: next, summary, ...keptTurns(conversation, copied.map((t) => ({ ...t })), historyKept) };
    }
    default: {
      const never: never = event;
      throw new Error(`unknown event ${JSON.stringify(never)}`);
    }
  }
}

/**
 * An ended turn as later turns see it — its prompt, the messages steered to it, then its
 * answers — made of the running turn's own messages where they are the same (its prompt's, its
 * steered ones, a reply without calls), so their tokens, counted for its requests, are not
 * counted again: the turn's sum is set from them when all are known (else counted when first needed).
 */
function endedTurn(running: TurnState): { messages: ModelMessage[]; tokens?: number } {
  const prompts = running.prompt.messages.length;
  // Its rejected answers and their re-asks are no part of it.
  const accepted = acceptedMessages(running);
  const said = accepted.slice(0, prompts).concat(accepted.slice(prompts).filter((m) => m.role === 'user'));
  const replies = accepted.filter((m) => m.role === 'assistant' && m.content.trim() !== '');
  const messages = [...said, ...replies.map((m) => (m.role === 'assistant' && m.tool_calls ? assistantMessage(m.content, []) : m))];
  let tokens = 0;
  for (const m of said) tokens += knownTokens(m) ?? NaN;
  for (const m of replies) tokens += MESSAGE_FRAMING_TOKENS + (knownContentTokens(m) ?? NaN);
  return Number.isNaN(tokens) ? { messages } : { messages, tokens };
}

/**
 * The conversation without the turns a rollback took back (the last ended ones: every turn
 * that ended from the first of them on, since the turns rolled back are always the latest): out
 * of `history`; a summary that covered one is dropped, and the turns it covered before them are
 * in the log only (`letGoThrough`), for the next compaction to summarise again; turns the fold
 * let go of from the first of them on are never read back. (The running turn a rollback stops
 * leaves no trace with its end: `ending` rollback.)
 */
function rolledBack(conversation: Conversation, turns: readonly string[]): Conversation {
  const gone = conversation.ends.filter((e) => turns.includes(e.turn));
  const ends = conversation.ends.filter((e) => !turns.includes(e.turn));
  const history = conversation.history.filter((t) => !turns.includes(t.turn));
  if (gone.length === 0) return { ...conversation, history, ends };
  // Everything the log holds before the first turn rolled back's end, nothing from it on.
  const before = Math.max(0, Math.min(...gone.map((e) => e.end)) - 1);
  const { summary } = conversation;
  if (summary !== null && summary.end > before) return { ...conversation, history, ends, summary: null, letGoThrough: before };
  return { ...conversation, history, ends, letGoThrough: Math.min(conversation.letGoThrough, before) };
}
