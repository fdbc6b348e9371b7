import type { DomainEvent } from '@rudder/contracts';
import { assistantMessage, evolveTurn, startTurn, userMessage, type ModelMessage, type TurnState } from '@rudder/agent';
import { onceKey } from './once-keys';
import { evolve, hasOpenWork, initialState, parseState, type ConversationState } from './state';

/**
 * A conversation as the turn runner folds it from its log, in log order: the decisions' state,
 * the running turn as the agent loop drives it, and the history the model sees — earlier
 * turns as their prompts, the messages steered to them, then their answers.
 */
export type Conversation = {
  state: ConversationState;
  running: TurnState | null;
  /**
   * One entry per earlier turn, oldest first, each its messages (a rolled-back turn has none: no
   * entry); the last `historyKept` of them.
   */
  history: ModelMessage[][];
  /**
   * How many earlier turns `history` keeps at most; null: every one. A worker keeps what the
   * largest window of its agents (`history.turns`) needs, so a long conversation's fold, held in
   * memory and stored as its snapshot, stays as small as a short one's.
   */
  historyKept: number | null;
};

export const emptyConversation = (historyKept: number | null = null): Conversation => ({ state: initialState(), running: null, history: [], historyKept });

/**
 * A snapshot's fold made to keep `historyKept` earlier turns; null when it may lack turns that
 * needs (it was folded keeping fewer, and had as many as it kept): read the log from the start
 * instead. A fold that kept more is cut down to `historyKept`.
 */
export function fromSnapshot(fold: Conversation, historyKept: number | null): Conversation | null {
  const kept = fold.historyKept;
  const mayLackTurns = kept !== null && fold.history.length >= kept && (historyKept === null || historyKept > kept);
  if (mayLackTurns) return null;
  return { ...fold, historyKept, history: lastTurns(fold.history, historyKept) };
}

/** The last `turns` of `history` (null: all of them); `history` itself when it has no more. */
const lastTurns = (history: ModelMessage[][], turns: number | null) => (turns === null || history.length <= turns ? history : history.slice(history.length - turns));

/**
 * The version of `Conversation` and `evolveConversation`, stored with each snapshot of the fold
 * (event_store.snapshots): raise it whenever either changes, and the snapshots folded by older
 * code are ignored (the log is read from the start).
 */
export const CONVERSATION_FOLD_VERSION = 4;

/**
 * What a model request may carry of the earlier turns: the last `turns` of them (an agent's
 * `history.turns`), oldest first, each whole and apart, so that its budget leaves out whole
 * turns (`fitRequest` in libs/agent); the running turn's own messages come after them.
 */
export function recentHistory(conversation: Conversation, turns: number): ModelMessage[][] {
  return lastTurns(conversation.history, Math.max(0, turns));
}

export function evolveConversation(conversation: Conversation, event: DomainEvent): Conversation {
  const { state, running, history, historyKept } = conversation;
  const next = evolve(state, event);
  // `history` and `historyKept` go on unchanged but at the end of a turn.
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
      const ended = [
        ...running.prompt.messages.map(userMessage),
        ...running.steered.map((s) => userMessage(s.text)),
        ...running.answers.map((answer) => assistantMessage(answer, [])),
      ];
      // Copies the list of earlier turns (at most `historyKept` + 1 references), never their messages.
      return { ...conversation, state: next, running: null, history: lastTurns([...history, ended], historyKept) };
    }
    default:
      return { ...conversation, state: next, running: running ? evolveTurn(running, event) : null };
  }
}

/** The stream's rules as the event store needs them. */
export const conversationRules = { parse: parseState, evolve, onceKey, hasOpenWork } as const;
