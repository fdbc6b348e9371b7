import type { DomainEvent } from '@rudder/contracts';
import { assistantMessage, evolveTurn, startTurn, userMessage, type ModelMessage, type TurnState } from '@rudder/agent';

/** An input waiting to be answered as a turn of its own. */
export type PendingPrompt = { id: string; text: string; messages: string[] };

/** A conversation as the worker folds it from its event log. */
export type Conversation = {
  /** Accepted inputs no turn has answered yet, in order. */
  queue: PendingPrompt[];
  running: TurnState | null;
  /** Earlier turns as the model sees them: each turn's prompt, then its answers. */
  history: ModelMessage[];
};

export const emptyConversation = (): Conversation => ({ queue: [], running: null, history: [] });

export function evolve(state: Conversation, event: DomainEvent): Conversation {
  switch (event.type) {
    case 'input.accepted': {
      const { id, text, messages } = event.data.input;
      return { ...state, queue: [...state.queue, { id, text, messages }] };
    }
    case 'turn.started': {
      const prompt = state.queue.find((p) => p.id === event.data.prompt.id) ?? { ...event.data.prompt, messages: [event.data.prompt.text] };
      return {
        ...state,
        queue: state.queue.filter((p) => p.id !== prompt.id),
        running: startTurn(event.data.turn, prompt),
      };
    }
    case 'model.replied':
    case 'tool.ended':
      return state.running ? { ...state, running: evolveTurn(state.running, event) } : state;
    case 'tool.started':
      return state;
    case 'turn.ended': {
      const turn = state.running;
      if (!turn || turn.id !== event.data.turn) return state;
      return {
        ...state,
        running: null,
        history: [
          ...state.history,
          ...turn.prompt.messages.map(userMessage),
          ...turn.answers.map((answer) => assistantMessage(answer, [])),
        ],
      };
    }
    default: {
      const never: never = event;
      throw new Error(`unknown event ${JSON.stringify(never)}`);
    }
  }
}

export const fold = (events: readonly DomainEvent[], state = emptyConversation()): Conversation => events.reduce(evolve, state);

export type Command = { type: 'start-next-turn'; turn: string };

/** Decides what a command adds to the log: no events when there is nothing to do. */
export function decide(state: Conversation, command: Command): DomainEvent[] {
  switch (command.type) {
    case 'start-next-turn': {
      const next = state.queue[0];
      if (state.running || !next) return [];
      return [{ type: 'turn.started', data: { turn: command.turn, prompt: { id: next.id, text: next.text } } }];
    }
    default: {
      const never: never = command.type;
      throw new Error(`unknown command ${String(never)}`);
    }
  }
}
