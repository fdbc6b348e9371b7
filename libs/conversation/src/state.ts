import type { QueueItemHeld, TodoItem } from '@rudder/contracts';
import { emptyTodos, type Ending, type TodoList } from '@rudder/agent/turn';
import type { Schedule } from './inputs/schedule';

/**
 * An input waiting to be answered: what the status shows of it (`QueueItem` of the contract, as
 * the state holds it) and what the decisions need. `seq` orders what waits: the acceptance order,
 * with 0 for an input that asked to run next.
 */
export type PendingInput = QueueItemHeld & {
  messages: string[];
  subject: string;
  seq: number;
  /** It was accepted while a turn ran or others waited: its turn will have started from the queue (a tool's `queued`). */
  queued?: boolean;
};
/** A call of the running turn waiting for a person's approval (`approval.requested`), as status shows it and a decision finds it. */
export type Awaiting = {
  approval: string;
  turn: string;
  step: number;
  callId: string;
  tool: string;
  arguments: string;
  requestedAt: string;
  /** When its timeout decides it as denied; null: never. */
  expiresAt: string | null;
  /** The agent whose tool it calls (its reply's: a handoff stored after it does not change it); absent in states stored before handoffs. */
  agent?: string;
};

/**
 * A turn that ended and was not rolled back, as a rollback needs it: its id, the plan's items
 * before its first change when it changed the plan, and the agent that answered before it when
 * it handed the conversation on (a rollback of it puts both back).
 */
export type EndedTurn = { turn: string; todosBefore?: TodoItem[]; agentBefore?: string };

/** How the running turn was asked to end (`TurnState.ending`: one type for the state and the turn). */
export type { Ending };

/**
 * A conversation as its decisions see it: who owns it and which agent answers it, the running
 * turn, what waits for it and what waits behind it. It is folded from the conversation's
 * events by `evolve` (`event-rules.ts`), the one fold of this stream on the write side: the store keeps it on
 * the conversation's row, updated in the same transaction as the events (so a decision under
 * the lock reads it with the lock, at no extra round trip), and the turn runner folds the
 * same events into the same state. It is bounded by the queue bounds, so it stays small.
 */
export type ConversationState = {
  /** The subject whose input opened the conversation; null before that. */
  owner: string | null;
  /** The agent that answers now: the first accepted input's, then the one the last handoff chose (`agent.changed`); null before the first accepted input. */
  agent: string | null;
  /** Access the owner gave other subjects (`access.granted`). */
  grants: Record<string, 'read' | 'write'>;
  runningTurn: string | null;
  /** How the running turn was asked to end, if it was. */
  ending: Ending | null;
  /** Steers that landed on the running turn and are not taken yet, in order. */
  steers: PendingInput[];
  /** Steers that landed on the running turn so far (taken or waiting): the cap counts these. */
  steersLanded: number;
  /** Inputs waiting to be turns of their own, in the order they run. */
  queue: PendingInput[];
  /** A steer accepted and not decided yet: its decision is the next event, in the same transaction. */
  undecided: PendingInput | null;
  /** The last accepted input: `ifLastInputId` compares with it. */
  lastInputId: string | null;
  /** Inputs accepted so far: the next one's `seq`. */
  accepted: number;
  /** The agent's plan (`todos.updated`); bounded (MAX_TODO_ITEMS). */
  todos: TodoList;
  /** The plan's items before the running turn first changed them (null: it has not): a rollback puts them back. */
  todosBeforeTurn: TodoItem[] | null;
  /** The agent that answered when the running turn first handed the conversation on (null: it has not): a rollback hands it back. */
  agentBeforeTurn: string | null;
  /**
   * The last turns that ended and were not rolled back, oldest first: the last
   * `ROLLBACK_TURNS_MAX` of them, the turns a rollback can reach (empty in states stored
   * before rollbacks existed).
   */
  endedTurns: EndedTurn[];
  /** What the conversation's latest model request carried, in tokens as its model counts them, and its agent's budget; null before one (or in logs from before it was recorded). */
  carried: { tokens: number; maxTokens: number } | null;
  /** The latest compaction of its history (`history.compacted`): the last turn its summary covers, how many turns it covers, its tokens; null before one. */
  compaction: { through: string; turns: number; tokens: number } | null;
  /** The calls of the running turn's last reply that have no result yet (their ids). */
  openCalls: string[];
  /** Its calls waiting for a person's approval, in the order they were asked for. */
  awaiting: Awaiting[];
  /**
   * No turn starts from the queue before this moment (ISO 8601, UTC): the latest `queue.held`
   * (a chat under `queue: {debounceMs}`) since a turn last started; null: none.
   */
  heldUntil: string | null;
  /** Its schedules (`schedule.made`), in the order they were made, each with its next time; at most SCHEDULES_MAX. */
  schedules: Schedule[];
  /** The firings' inputs accepted so far: `accepted` less these is a person's chats and steers (`unlessUserSpokeSince`). */
  firingsAccepted: number;
  /**
   * When something is due with no input to wake the conversation (ISO 8601, UTC): the earliest
   * `expiresAt` of `awaiting`, the earliest `next` of `schedules`, and `heldUntil` while no turn
   * runs and something waits in the queue (`dueOf`). The store indexes it, so a worker finds its due conversations without
   * holding them (`conversationsDue` in @rudder/event-store). Null: nothing.
   */
  dueAt: string | null;
};

export const initialState = (): ConversationState => ({
  owner: null,
  agent: null,
  grants: {},
  runningTurn: null,
  ending: null,
  steers: [],
  steersLanded: 0,
  queue: [],
  undecided: null,
  lastInputId: null,
  accepted: 0,
  todos: emptyTodos(),
  todosBeforeTurn: null,
  agentBeforeTurn: null,
  endedTurns: [],
  carried: null,
  compaction: null,
  openCalls: [],
  awaiting: [],
  heldUntil: null,
  schedules: [],
  firingsAccepted: 0,
  dueAt: null,
});

/** The inputs but the one with this id. */
export const without = (inputs: PendingInput[], id: string) => inputs.filter((i) => i.id !== id);

/** The state with these calls waiting. */
export const withAwaiting = (state: ConversationState, awaiting: Awaiting[]): ConversationState => ({ ...state, awaiting });

/**
 * When the state is next due (its `dueAt`): the earliest approval timeout, the earliest time a
 * schedule fires, or the end of the queue's hold when the queue could otherwise start a turn
 * (none runs, something waits).
 * `evolve` sets it after every event, so it is never out of step with what it is made of.
 */
export function dueOf(state: ConversationState): string | null {
  const held = state.runningTurn === null && state.queue.length > 0 ? state.heldUntil : null;
  return [held, ...state.awaiting.map((a) => a.expiresAt), ...state.schedules.map((s) => s.next)].reduce<string | null>((due, at) => (at !== null && (due === null || at < due) ? at : due), null);
}

/** The queue is held at `now`: no turn starts from it yet (a `{debounceMs}` queue not quiet long enough). */
// Stryker disable next-line ConditionalExpression: without the null check `Date.parse(null)` is NaN, and NaN is greater than no moment: not held, the same
export const queueHeld = (state: ConversationState, now: Date): boolean => state.heldUntil !== null && Date.parse(state.heldUntil) > now.getTime();

/** A state as stored (jsonb); fields missing in rows written by older code take their initial value. */
export function parseState(stored: Partial<ConversationState> | null): ConversationState {
  const state = { ...initialState(), ...stored };
  const complete = (p: PendingInput): PendingInput => ({ ...p, messages: p.messages ?? [p.text], subject: p.subject ?? 'anonymous' });
  return { ...state, queue: state.queue.map(complete), steers: state.steers.map(complete) };
}

/**
 * The running turn is parked: every call of its last reply left without a result waits for a
 * person's approval, and nothing asked it to end. Nothing can happen until a decision (or a
 * stop, or a timeout) is stored, so nothing runs, and nothing is held in memory for it.
 */
export const parked = (state: ConversationState): boolean =>
  state.runningTurn !== null &&
  state.ending === null &&
  state.openCalls.length > 0 &&
  state.openCalls.every((id) => state.awaiting.some((a) => a.callId === id));

/**
 * Work left: a turn running that is not parked, or (none running) inputs waiting to be turns. A
 * worker taking the partition resumes these; a parked conversation is left in the store.
 */
export const hasOpenWork = (state: ConversationState): boolean => (state.runningTurn !== null ? !parked(state) : state.queue.length > 0);

/**
 * Who may do what: the owner reads and writes, a subject granted `write` too, one granted
 * `read` reads. A conversation nobody opened yet is open to its first writer, and readable by nobody.
 */
export function mayAccess(state: Pick<ConversationState, 'owner' | 'grants'>, subject: string, access: 'read' | 'write'): boolean {
  // Nobody owns it yet: its first write makes the writer the owner; there is nothing to read.
  if (state.owner === null) return access === 'write';
  if (state.owner === subject) return true;
  const granted = state.grants[subject];
  return granted === 'write' || (granted === 'read' && access === 'read');
}
