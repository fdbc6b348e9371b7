import type { DomainEvent } from '@rudder/contracts';
import { assistantMessage, evolveTurn, startTurn, userMessage, type ModelMessage, type TurnState } from '@rudder/agent';

/**
 * An input waiting to be answered as a turn of its own; `position` orders the queue. (Which
 * input starts the next turn is decided under the conversation's lock from its head; the fold
 * keeps the messages of what waits, and the history the model sees.)
 */
export type PendingPrompt = { id: string; text: string; messages: string[]; position: number };

/** A conversation as the worker folds it from its event log. */
export type Conversation = {
  /** Inputs no turn has answered yet, in the order they were accepted. */
  queue: PendingPrompt[];
  /** Steers accepted and not decided yet (the decision is in the same transaction; this bridges the fold). */
  undecided: PendingPrompt[];
  /** Steers that landed on the running turn and are not taken yet. */
  landed: PendingPrompt[];
  running: TurnState | null;
  /** Ids of every steer a turn took: a steer is taken at most once. */
  taken: Set<string>;
  /** Earlier turns as the model sees them: each turn's prompt, the messages steered to it, then its answers. */
  history: ModelMessage[];
};

/** An event with its position in the log. */
export type PositionedEvent = DomainEvent & { position: number };

export const emptyConversation = (): Conversation => ({
  queue: [],
  undecided: [],
  landed: [],
  running: null,
  taken: new Set(),
  history: [],
});

const inOrder = (prompts: PendingPrompt[]) => [...prompts].sort((a, b) => a.position - b.position);

/**
 * The fold. A worker applies its own writes as it commits them and reads the others' (the
 * ingested inputs) later, so an event may be applied after one positioned behind it: the
 * queue is kept in position order, and a steer decided for a turn that has meanwhile ended
 * is queued unless that turn took it.
 */
export function evolve(state: Conversation, event: PositionedEvent): Conversation {
  switch (event.type) {
    case 'input.accepted': {
      const { id, text, messages, kind } = event.data.input;
      const prompt = { id, text, messages, position: event.position };
      return kind === 'chat'
        ? { ...state, queue: inOrder([...state.queue, prompt]) }
        : { ...state, undecided: [...state.undecided, prompt] };
    }
    case 'steer.accepted': {
      const { input, landed, turn } = event.data;
      const promoted = state.queue.find((p) => p.id === input.id); // a follow-up promoted to a steer
      if (promoted && !landed) return state;
      const prompt = promoted ?? state.undecided.find((p) => p.id === input.id) ?? { ...input, messages: [input.text], position: event.position };
      const undecided = state.undecided.filter((p) => p.id !== input.id);
      const queue = state.queue.filter((p) => p.id !== input.id);
      if (state.taken.has(input.id)) return { ...state, undecided, queue };
      if (landed && state.running?.id === turn) return { ...state, undecided, queue, landed: [...state.landed, prompt] };
      return { ...state, undecided, queue: inOrder([...queue, prompt]) };
    }
    case 'input.retracted':
    case 'input.discarded': {
      const gone = (p: PendingPrompt) => p.id !== event.data.input.id;
      return { ...state, queue: state.queue.filter(gone), landed: state.landed.filter(gone), undecided: state.undecided.filter(gone) };
    }
    case 'input.rejected':
    case 'input.delivered':
    case 'retract.refused':
    case 'promote.refused':
      return state;
    case 'steer.taken': {
      const taken = new Set(state.taken).add(event.data.input.id);
      const landed = state.landed.filter((p) => p.id !== event.data.input.id);
      const undecided = state.undecided.filter((p) => p.id !== event.data.input.id);
      const running = state.running ? evolveTurn(state.running, event) : null;
      return { ...state, taken, landed, undecided, running };
    }
    case 'turn.started': {
      const prompt = state.queue.find((p) => p.id === event.data.prompt.id) ?? {
        ...event.data.prompt,
        messages: [event.data.prompt.text],
        position: event.position,
      };
      return {
        ...state,
        queue: state.queue.filter((p) => p.id !== prompt.id),
        landed: [],
        running: startTurn(event.data.turn, prompt),
      };
    }
    case 'stop.requested':
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
        // What landed and was not taken (the turn stopped, failed or died) is answered as turns of its own.
        queue: inOrder([...state.queue, ...state.landed]),
        landed: [],
        // A rolled-back turn leaves no trace in what later turns see.
        history:
          turn.ending === 'rollback'
            ? state.history
            : [
                ...state.history,
                ...turn.prompt.messages.map(userMessage),
                ...turn.steered.map((s) => userMessage(s.text)),
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

export const fold = (events: readonly PositionedEvent[], state = emptyConversation()): Conversation => events.reduce(evolve, state);
