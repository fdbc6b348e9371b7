import { isEventOf, type DomainEvent, type EventType, type ToolCall, type TurnStatus, type Usage } from '@rudder/contracts';
import { assistantMessage, toolMessage, userMessage, type ModelMessage } from './messages';
import { emptyTodos, type TodoList } from './todos';

/**
 * `@rudder/agent/turn`: the turn as the conversation's decider folds and ends it, and the plan it
 * carries. Pure — it loads neither the model client nor the tokenizer (the package's index does),
 * so the decider, and the gateway with it, stays free of them
 * (libs/conversation/src/import-graph.unit.spec.ts).
 */
export { emptyTodos, type TodoList };

/**
 * A running turn as the agent loop needs it: its own messages so far (the prompt's user
 * messages, then each stored model reply and tool result), folded from the stored events.
 */
export type TurnPrompt = {
  id: string;
  text: string;
  messages: string[];
  subject: string;
  /** Its input waited behind a running turn before this turn started (a follow-up, or a steer that did not land). */
  queued?: boolean;
};

export type TurnState = {
  id: string;
  prompt: TurnPrompt;
  messages: ModelMessage[];
  /** Model replies stored so far; the next reply is step `steps`. */
  steps: number;
  /** The calls of the last reply that have no stored result yet. */
  openCalls: ToolCall[];
  /** Non-empty contents of the stored replies, in order: the turn's answers. */
  answers: string[];
  /** True once the last stored reply had no tool calls (and nothing was steered in after it). */
  answered: boolean;
  /** The steered messages the turn took, in order. */
  steered: { id: string; text: string }[];
  /** The stored replies' usage, summed; null while no reply reported any. */
  usage: Usage | null;
  /**
   * How the turn was asked to end: `stop` and `rollback` end it `stopped` at once (closing its
   * open calls); `interrupt` ends it `superseded` at its next step; `wind-down` asks the model
   * once more after its next step and ends it `completed`.
   */
  ending: 'stop' | 'rollback' | 'interrupt' | 'wind-down' | null;
  /** The replies stored when it was asked to wind down (`steps` then); null while it was not. */
  windDownAt: number | null;
  /** The conversation's plan as stored (`todos.updated`): from before the turn, then as its calls of the `todos` tool left it. */
  todos: TodoList;
  /** The approvals of the last reply's calls, by call id (`approval.requested`, then `approval.decided`). */
  approvals: Record<string, CallApproval>;
  /** The turn's latest handoff (`agent.changed`): the rest of it runs `to`; null while it made none. */
  handoff: { from: string; to: string; step: number } | null;
  /**
   * Where in `messages` each answer the output guard rejected to ask again is (`answer.rejected`),
   * in order; the re-ask's message follows it. Neither is an answer: later turns see neither
   * (`acceptedMessages`). (A blocked answer is not in `messages`: the block's message stands in its place.)
   */
  rejected: number[];
};

/**
 * A call's approval: waiting for a person, or decided — approved (to run with `arguments` when
 * edited), or denied (`reason`; `subject` null when its timeout decided it).
 */
export type CallApproval = {
  approval: string;
  status: 'awaiting' | 'approved' | 'denied';
  arguments: string | null;
  reason: string | null;
  subject: string | null;
};

export function startTurn(id: string, prompt: TurnPrompt, todos: TodoList = emptyTodos()): TurnState {
  return {
    id,
    prompt,
    messages: prompt.messages.map(userMessage),
    steps: 0,
    openCalls: [],
    answers: [],
    answered: false,
    steered: [],
    usage: null,
    ending: null,
    windDownAt: null,
    todos,
    approvals: {},
    handoff: null,
    rejected: [],
  };
}

const addUsage = (sum: Usage | null, more: Usage | undefined): Usage | null =>
  more === undefined
    ? sum
    : {
        promptTokens: (sum?.promptTokens ?? 0) + more.promptTokens,
        completionTokens: (sum?.completionTokens ?? 0) + more.completionTokens,
        totalTokens: (sum?.totalTokens ?? 0) + more.totalTokens,
      };

/**
 * The event types a turn folds: its steps (replies, results, the plan), the steers it takes,
 * how it is asked to end, its calls' approvals and its handoffs. Every other type — an input's acceptance, a
 * control's decision, a new input kind's events — leaves a turn as it is.
 */
export const TURN_EVENT_TYPES = [
  'model.replied',
  'answer.rejected',
  'tool.ended',
  'steer.taken',
  'stop.requested',
  'todos.updated',
  'approval.requested',
  'approval.decided',
  'agent.changed',
] as const satisfies readonly EventType[];

/** Evolves a turn by one of its events (`TURN_EVENT_TYPES`); events of other turns and types leave it as it is. */
export function evolveTurn(turn: TurnState, event: DomainEvent): TurnState {
  if (!isEventOf(event, TURN_EVENT_TYPES)) return turn;
  switch (event.type) {
    case 'model.replied': {
      if (event.data.turn !== turn.id) return turn;
      const { content, toolCalls } = event.data;
      return {
        ...turn,
        messages: [...turn.messages, assistantMessage(content, toolCalls)],
        steps: event.data.step + 1,
        openCalls: toolCalls,
        answers: content.trim() === '' ? turn.answers : [...turn.answers, content],
        answered: toolCalls.length === 0,
        usage: addUsage(turn.usage, event.data.usage),
        approvals: {},
      };
    }
    case 'answer.rejected': {
      if (event.data.turn !== turn.id) return turn;
      const { answer = '', feedback, reask } = event.data;
      const step = { steps: event.data.step + 1, openCalls: [], answered: false, usage: addUsage(turn.usage, event.data.usage), approvals: {} };
      // Blocked: the block's message is the turn's answer, in the rejected one's place (the turn ends with it).
      if (reask === null) return { ...turn, ...step, messages: [...turn.messages, assistantMessage(feedback, [])], answers: [...turn.answers, feedback] };
      // Asked again: the rejected answer stays in the turn's messages, for the re-ask's request, and the re-ask's message after it.
      const reasked = [assistantMessage(answer, []), userMessage(reaskMessage(turn.prompt.text, feedback))];
      return { ...turn, ...step, messages: [...turn.messages, ...reasked], rejected: [...turn.rejected, turn.messages.length] };
    }
    case 'tool.ended': {
      if (event.data.turn !== turn.id) return turn;
      return {
        ...turn,
        messages: [...turn.messages, toolMessage(event.data.callId, event.data.result)],
        openCalls: turn.openCalls.filter((c) => c.id !== event.data.callId),
      };
    }
    case 'steer.taken': {
      // A steered message sits where it was taken: after the tool results, before the next request.
      if (event.data.turn !== turn.id) return turn;
      return {
        ...turn,
        messages: [...turn.messages, userMessage(event.data.input.text)],
        steered: [...turn.steered, event.data.input],
        answered: false,
      };
    }
    case 'stop.requested': {
      if (event.data.turn !== turn.id) return turn;
      const ending = strongerEnding(turn.ending, event.data.mode);
      return { ...turn, ending, windDownAt: ending === 'wind-down' && turn.windDownAt === null ? turn.steps : turn.windDownAt };
    }
    case 'todos.updated':
      return { ...turn, todos: { items: event.data.items, next: event.data.next } };
    case 'approval.requested': {
      if (event.data.turn !== turn.id || event.data.step !== turn.steps - 1) return turn;
      const { approval, call } = event.data;
      return { ...turn, approvals: { ...turn.approvals, [call.id]: { approval, status: 'awaiting', arguments: null, reason: null, subject: null } } };
    }
    case 'approval.decided': {
      if (event.data.turn !== turn.id || event.data.step !== turn.steps - 1) return turn;
      const { approval, callId, decision, reason, subject } = event.data;
      const status = decision === 'approve' ? 'approved' : 'denied';
      return { ...turn, approvals: { ...turn.approvals, [callId]: { approval, status, arguments: event.data.arguments, reason, subject } } };
    }
    case 'agent.changed': {
      // A rollback's hand back is no handoff of the turn it names (that turn is taken back).
      if (event.data.turn !== turn.id || event.data.rollback !== undefined) return turn;
      const { from, to, step } = event.data;
      return { ...turn, handoff: { from, to, step } };
    }
    // Stryker disable next-line all: unreachable — `isEventOf` above lets only TURN_EVENT_TYPES by, and each has its case (the compiler checks it).
    default: {
      const never: never = event;
      // Stryker disable next-line StringLiteral: unreachable, as the `default:` above.
      throw new Error(`unknown event ${JSON.stringify(never)}`);
    }
  }
}

export type Ending = NonNullable<TurnState['ending']>;

/** How hard each way of ending a turn is: a later, softer request never undoes a harder one (a graceful stop after a stop still stops). */
const ENDING_RANK: Record<Ending, number> = { 'wind-down': 1, interrupt: 2, stop: 3, rollback: 4 };

/** The ending a turn keeps when `next` is asked for after `current`: the harder of the two (the later, if as hard). */
// Stryker disable next-line ConditionalExpression,EqualityOperator: `true` for `current !== null` reads ENDING_RANK[null], undefined, which is never `>` a rank; `>=` differs only at equal ranks, which only one ending has, so `current` is `next` there.
export const strongerEnding = (current: Ending | null, next: Ending): Ending => (current !== null && ENDING_RANK[current] > ENDING_RANK[next] ? current : next);

export type NextAction =
  | { type: 'request-model'; step: number }
  | { type: 'run-tools'; step: number; calls: ToolCall[] }
  | { type: 'park' }
  | { type: 'end'; status: TurnStatus; outcome: string | null };

/** Whether the call waits for a person's decision. */
export const awaitingApproval = (turn: TurnState, callId: string): boolean => turn.approvals[callId]?.status === 'awaiting';

/**
 * What the turn does next, from what is stored. This is what makes a resumed turn exact:
 * a stored reply is not asked for again and a stored tool result is not run again.
 */
export function nextAction(turn: TurnState, limits: { maxSteps: number }): NextAction {
  if (turn.ending === 'stop') return { type: 'end', status: 'stopped', outcome: STOPPED };
  if (turn.ending === 'rollback') return { type: 'end', status: 'stopped', outcome: ROLLED_BACK };
  if (turn.answered) return { type: 'end', status: 'completed', outcome: null };
  // Winding down, the model was asked once more and called tools again: the turn ends with that reply, its calls not run.
  if (turn.ending === 'wind-down' && turn.openCalls.length > 0 && turn.steps - 1 > (turn.windDownAt ?? turn.steps)) {
    return { type: 'end', status: 'completed', outcome: null };
  }
  if (turn.openCalls.length > 0) {
    // Every call left waits for a person: the turn parks until a decision (or an ending) comes.
    if (turn.ending === null && turn.openCalls.every((call) => awaitingApproval(turn, call.id))) return { type: 'park' };
    return { type: 'run-tools', step: turn.steps - 1, calls: turn.openCalls };
  }
  // A step that took steered messages is always answered (they landed: the model must see
  // them), even past the limit or when interrupted; the steer cap bounds how far that goes.
  // (A re-ask's message is no steered message: the re-ask is asked within the limits, and not when interrupted.)
  const reasking = turn.rejected.at(-1) === turn.messages.length - 2;
  // Stryker disable next-line OptionalChaining: a turn with a step has that step's reply among its messages, so the last one is there.
  const steeredLast = turn.steps > 0 && turn.messages.at(-1)?.role === 'user' && !reasking;
  if (steeredLast) return { type: 'request-model', step: turn.steps };
  if (turn.ending === 'interrupt' && turn.steps > 0) return { type: 'end', status: 'superseded', outcome: SUPERSEDED };
  if (turn.steps >= limits.maxSteps) {
    return { type: 'end', status: 'failed', outcome: `the turn reached its limit of ${limits.maxSteps} model replies` };
  }
  return { type: 'request-model', step: turn.steps };
}

/**
 * The message that asks the model again after the output guard rejected its answer: the guard's
 * feedback, and the turn's prompt (its own text, never a message steered to it: those are in
 * their places in the turn, once).
 */
export const reaskMessage = (prompt: string, feedback: string): string =>
  `Your answer was not accepted: ${feedback}\n\nAnswer again what was asked: ${prompt}`;

/** The turn's messages without the answers its output guard rejected and their re-asks' messages: the turn as later turns see it. */
export function acceptedMessages(turn: TurnState): ModelMessage[] {
  // Stryker disable next-line ConditionalExpression: a shortcut — with nothing rejected the filter below leaves every message, the same ones in the same order.
  if (turn.rejected.length === 0) return turn.messages;
  const left = new Set(turn.rejected.flatMap((i) => [i, i + 1]));
  return turn.messages.filter((_, i) => !left.has(i));
}

/** The outcomes of turns that did not complete, as the log states them. */
export const STOPPED = 'stopped on request';
export const ROLLED_BACK = 'rolled back: a newer input replaced it';
export const SUPERSEDED = 'interrupted by a newer input at a step';

/**
 * The events that end a turn: a result for every call still open (the conversation never
 * holds a call without its result), then `turn.ended` with everything the turn answered.
 */
export const endTurn = (turn: TurnState, status: TurnStatus, outcome: string | null): DomainEvent[] => [
  ...turn.openCalls.map(
    (call): DomainEvent => ({
      type: 'tool.ended',
      data: {
        turn: turn.id,
        step: turn.steps - 1,
        callId: call.id,
        name: call.name,
        result: awaitingApproval(turn, call.id)
          ? `not run: the turn was ${status} while the call waited for approval`
          : turn.ending === 'wind-down'
            ? 'not run: the turn was asked to wind down'
            : `not run to the end: the turn was ${status}`,
        isError: true,
      },
    }),
  ),
  {
    type: 'turn.ended',
    data: { turn: turn.id, status, outcome, content: turn.answers.join('\n\n'), steered: turn.steered, ...(turn.usage ? { usage: turn.usage } : {}) },
  },
];
