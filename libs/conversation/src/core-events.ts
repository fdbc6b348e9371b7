import { ROLLBACK_TURNS_MAX, type CoreEventType } from '@rudder/contracts';
import type { EventRulesTable } from './event-rules';
import { receiptKey } from './once-keys';
import { without, withAwaiting, type ConversationState, type EndedTurn, type PendingInput } from './state';

/** No call of a turn open or waiting: at a turn's start and end. */
const noCalls = { openCalls: [], awaiting: [] };
/**
 * The queue with `joining` merged in by `seq` (acceptance order): each goes just after the last
 * input waiting that was sent before it, so it overtakes nothing sent earlier. What waits keeps
 * its order, so a follow-up moved (`input.moved`) stays where it was put; a queue in `seq` order
 * stays so.
 */
function mergeInOrder(queue: PendingInput[], joining: PendingInput[]): PendingInput[] {
  const merged = [...queue];
  for (const input of [...joining].sort((a, b) => a.seq - b.seq)) {
    merged.splice(merged.findLastIndex((p) => p.seq <= input.seq) + 1, 0, input);
  }
  return merged;
}
/** A turn ending now, as a rollback will need it: with the plan before its first change, when it changed it. */
const endedTurn = (state: ConversationState, turn: string): EndedTurn => ({
  turn,
  ...(state.todosBeforeTurn === null ? {} : { todosBefore: state.todosBeforeTurn }),
  ...(state.agentBeforeTurn === null ? {} : { agentBefore: state.agentBeforeTurn }),
});

/**
 * The rules of the conversation's and the turn's own events (`events.ts` of @rudder/contracts):
 * how each evolves the state, and its once key. An input kind's events have theirs in its
 * module (`inputs/<kind>.ts`).
 */
export const CORE_EVENT_RULES: EventRulesTable<CoreEventType> = {
  'conversation.opened': {
    evolve: (state, data) => ({ ...state, owner: data.owner, agent: data.agent }),
    onceKey: () => 'opened',
  },
  'input.accepted': {
    evolve: (state, data) => {
      const { id, kind, text, messages, subject } = data.input;
      const accepted = state.accepted + 1;
      const queued = state.runningTurn !== null || state.queue.length > 0;
      const pending: PendingInput = { id, kind, text, messages, subject, seq: accepted, ...(queued ? { queued } : {}) };
      // A steer joins the queue or the running turn when it is decided (next event, same transaction).
      return kind === 'chat'
        ? { ...state, lastInputId: id, accepted, queue: [...state.queue, pending] }
        : { ...state, lastInputId: id, accepted, undecided: pending };
    },
    onceKey: (data) => receiptKey.input(data.input.id),
  },
  'input.rejected': { evolve: (state) => state, onceKey: (data) => receiptKey.rejected(data.input.id) },
  'guard.failed': {
    evolve: (state) => state,
    // One per try, and no receipt (see receiptKeys): the id stays open for the try after it.
    onceKey: (data) => `guard-failed:${data.input.id}:${data.attempt}`,
  },
  'input.delivered': { evolve: (state) => state, onceKey: (data) => `delivered:${data.input.id}` },
  'steer.accepted': {
    evolve: (state, data) => {
      const { input, landed } = data;
      const promoted = state.queue.find((i) => i.id === input.id); // a follow-up promoted to a steer
      const decided = promoted ?? (state.undecided?.id === input.id ? state.undecided : null);
      const steer: PendingInput = {
        ...(decided ?? { id: input.id, text: input.text, messages: [input.text], subject: 'anonymous', seq: state.accepted }),
        kind: 'steer',
      };
      const next = { ...state, undecided: null };
      if (landed) return { ...next, queue: without(state.queue, input.id), steers: [...state.steers, steer], steersLanded: state.steersLanded + 1 };
      return promoted ? next : { ...next, queue: mergeInOrder(state.queue, [steer]) };
    },
    onceKey: (data) => receiptKey.steerDecided(data.input.id),
  },
  'steer.taken': {
    evolve: (state, data) => ({ ...state, steers: without(state.steers, data.input.id) }),
    onceKey: (data) => `steer-taken:${data.input.id}`,
  },
  'turn.started': {
    evolve: (state, data) => ({
      ...state,
      runningTurn: data.turn,
      ending: null,
      steers: [],
      steersLanded: 0,
      queue: without(state.queue, data.prompt.id),
      todosBeforeTurn: null,
      agentBeforeTurn: null,
      // A turn starts from the queue only once its hold is over: the next hold is the next `queue.held`'s.
      heldUntil: null,
      ...noCalls,
    }),
    onceKey: (data) => `turn-for:${data.prompt.id}`,
  },
  'turn.ended': {
    // Steers it did not take are answered as turns of their own, in the order they were sent.
    evolve: (state, data) => ({
      ...state,
      endedTurns: state.ending === 'rollback' ? state.endedTurns : [...state.endedTurns, endedTurn(state, data.turn)].slice(-ROLLBACK_TURNS_MAX),
      runningTurn: null,
      ending: null,
      steers: [],
      steersLanded: 0,
      queue: mergeInOrder(state.queue, state.steers),
      todosBeforeTurn: null,
      agentBeforeTurn: null,
      ...noCalls,
    }),
    onceKey: (data) => `turn-ended:${data.turn}`,
  },
  'todos.updated': {
    evolve: (state, data) => {
      const { items, next, callId } = data;
      // A rolled-back turn's undoing (no call) leaves nothing to undo.
      const before = callId === null ? null : (state.todosBeforeTurn ?? state.todos.items);
      return { ...state, todos: { items, next }, todosBeforeTurn: before };
    },
    // A call changes the plan once, with its result; a rolled-back turn's changes are undone once, with its end.
    onceKey: (data) => (data.callId === null ? `todos-undone:${data.turn}` : `todos:${data.turn}:${data.step}:${data.callId}`),
  },
  'model.replied': {
    evolve: (state, data) => {
      const replied = data.turn === state.runningTurn ? { ...state, openCalls: data.toolCalls.map((c) => c.id) } : state;
      return data.carried ? { ...replied, carried: data.carried } : replied;
    },
    onceKey: (data) => `reply:${data.turn}:${data.step}`,
  },
  'answer.rejected': {
    // A step's reply, as `model.replied` is, with no call open; its text is nothing the state keeps.
    evolve: (state, data) => {
      const replied = data.turn === state.runningTurn ? { ...state, openCalls: [] } : state;
      return data.carried ? { ...replied, carried: data.carried } : replied;
    },
    // The step's one reply: accepted (`model.replied`) or rejected, never both.
    onceKey: (data) => `reply:${data.turn}:${data.step}`,
  },
  'tool.started': { evolve: (state) => state, onceKey: (data) => `tool-started:${data.turn}:${data.step}:${data.call.id}` },
  'tool.ended': {
    evolve: (state, data) => {
      if (data.turn !== state.runningTurn) return state;
      const { step, callId } = data;
      const closed = withAwaiting(state, state.awaiting.filter((a) => a.step !== step || a.callId !== callId));
      return { ...closed, openCalls: state.openCalls.filter((id) => id !== callId) };
    },
    onceKey: (data) => `tool-ended:${data.turn}:${data.step}:${data.callId}`,
  },
  'approval.requested': {
    evolve: (state, data) => {
      const { turn, step, approval, call, requestedAt, expiresAt } = data;
      if (turn !== state.runningTurn) return state;
      // Asked before a handoff of its step is stored (the loop stores a transfer last): the conversation's agent is the one whose tool it calls.
      const agent = state.agent === null ? {} : { agent: state.agent };
      return withAwaiting(state, [...state.awaiting, { approval, turn, step, callId: call.id, tool: call.name, arguments: call.arguments, requestedAt, expiresAt, ...agent }]);
    },
    onceKey: (data) => `approval:${data.turn}:${data.step}:${data.call.id}`,
  },
  'agent.changed': {
    // The agent the conversation is handed to answers from now on: its policy decides the steers and bounds after it.
    // A rollback's hand back takes back every handoff of the turns it took back, the running one's too. A handoff is the
    // running turn's (only its commits are decided): the agent before its first is kept until the turn's end.
    evolve: (state, data) =>
      data.rollback !== undefined
        ? { ...state, agent: data.to, agentBeforeTurn: null }
        : { ...state, agent: data.to, agentBeforeTurn: state.agentBeforeTurn ?? state.agent },
    // A reply hands the conversation on at most once: its first transfer call's, stored with that call's result; a rollback hands it back once.
    onceKey: (data) => (data.rollback !== undefined ? `agent-back:${data.rollback}` : `agent-changed:${data.turn}:${data.step}`),
  },
  'history.compacted': {
    evolve: (state, data) => {
      const { through, turns, tokens } = data;
      return { ...state, compaction: { through: through.turn, turns, tokens } };
    },
    // One summary through a turn: a compaction redone after a crash finds it stored.
    onceKey: (data) => `compacted:${data.through.turn}`,
  },
};
