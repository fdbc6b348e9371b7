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
  /** One entry per earlier turn, oldest first, each its messages (a rolled-back turn has none: no entry). */
  history: ModelMessage[][];
};

export const emptyConversation = (): Conversation => ({ state: initialState(), running: null, history: [] });

/**
 * The version of `Conversation` and `evolveConversation`, stored with each snapshot of the fold
 * (event_store.snapshots): raise it whenever either changes, and the snapshots folded by older
 * code are ignored (the log is read from the start).
 */
export const CONVERSATION_FOLD_VERSION = 2;

/**
 * What a model request carries of the earlier turns: the last `turns` of them, whole, oldest
 * first (an agent's `history.turns`); the running turn's own messages come after them.
 */
export function recentHistory(conversation: Conversation, turns: number): ModelMessage[] {
  return turns <= 0 ? [] : conversation.history.slice(-turns).flat();
}

export function evolveConversation(conversation: Conversation, event: DomainEvent): Conversation {
  const { state, running, history } = conversation;
  const next = evolve(state, event);
  switch (event.type) {
    case 'turn.started': {
      const waiting = state.queue.find((p) => p.id === event.data.prompt.id);
      const prompt = {
        ...event.data.prompt,
        messages: waiting?.messages ?? [event.data.prompt.text],
        subject: waiting?.subject ?? state.owner ?? 'anonymous',
      };
      return { state: next, running: startTurn(event.data.turn, prompt), history };
    }
    case 'turn.ended': {
      if (!running || running.id !== event.data.turn) return { state: next, running, history };
      // A rolled-back turn leaves no trace in what later turns see.
      if (running.ending === 'rollback') return { state: next, running: null, history };
      const kept = [
        ...running.prompt.messages.map(userMessage),
        ...running.steered.map((s) => userMessage(s.text)),
        ...running.answers.map((answer) => assistantMessage(answer, [])),
      ];
      return { state: next, running: null, history: [...history, kept] };
    }
    default:
      return { state: next, running: running ? evolveTurn(running, event) : null, history };
  }
}

/** The stream's rules as the event store needs them. */
export const conversationRules = { parse: parseState, evolve, onceKey, hasOpenWork } as const;
