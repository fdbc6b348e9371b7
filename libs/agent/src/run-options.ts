/**
 * What the agent loop (`runTurn`, loop.ts) is given — the agent, the model, the turn as stored
 * and the runner's hooks — and what each of its commits answers.
 */
import type { DomainEvent, ToolCall } from '@rudder/contracts';
import type { ContextBudget } from './context';
import type { HandoffFilter, HandoffTarget } from './handoffs';
import type { ModelClient } from './model';
import type { OutputGuard } from './output-guard';
import type { EarlierTurn } from './tokens';
import type { Tool } from './tools';
import type { TurnState } from './turn';

/** An agent as the loop runs it: its instructions, tools and limits. */
export type Agent = {
  systemPrompt: string;
  tools: readonly Tool[];
  /** A turn fails rather than asking the model more than this many times. */
  maxSteps: number;
  /** What a model request may carry (`fitRequest`); its usage ratio learns from each reply. */
  context: ContextBudget;
  /**
   * Whether it keeps a plan (todos.ts): its model gets the built-in `todos` tool, and every
   * request carries the plan right after the instructions.
   */
  todos: boolean;
  /**
   * Whether its model makes schedules of its conversation (schedules.ts): it gets the built-in
   * `schedule` tool, whose calls the runner stores (`RunTurnOptions.scheduleCall`). Default false.
   */
  schedules?: boolean;
  /** Its name: what `agent.changed` says a handoff came from, and how a run knows the turn was handed to another. */
  name?: string;
  /**
   * The agents it may hand the conversation to (handoffs.ts): its model gets a built-in
   * `transfer_to_<name>` tool for each. A call of one ends the run after its step.
   */
  handoffs?: readonly HandoffTarget[];
  /**
   * What its requests carry (`HandoffFilter`), when it took the conversation by a handoff in
   * this turn and that handoff has a filter. Absent: they carry what every request does.
   */
  filter?: HandoffFilter;
  /**
   * Checks each final answer (a reply with no tool calls) before it is stored as the answer
   * (output-guard.ts): its tokens are held until it passes; a rejected one asks the model again
   * or ends the turn `refused`, and is shown to no one. Absent: answers are not checked.
   */
  outputGuard?: OutputGuard;
};

/**
 * What a commit answers: the turn as the conversation's fold holds it once the commit is
 * stored — every event stored up to it folded in, once, in log order, whoever stored it (a stop,
 * say) — and whether what was stored ended it (then `turn` is the turn as it ended). The loop
 * folds nothing itself: each step reads the turn the last commit answered.
 */
export type StoredTurn = {
  turn: TurnState;
  ended: boolean;
  /** Every open call of the turn waits for a person's decision: nothing runs until one comes (a new run then). */
  parked?: boolean;
};

/**
 * A loop the worker's runner drives — the loop seam: Rudder's own (`runTurn`, loop.ts), or a
 * framework's, made by its adapter on a `DurableTurn` (durable-turn.ts). Either way it is given
 * the same options and answers the turn as it ended, or as it parked.
 */
export type TurnLoop = (options: RunTurnOptions) => Promise<TurnState>;

export type ConversationHistory = { summary: string | null; earlier: readonly EarlierTurn[] };

export type RunTurnOptions = {
  /** The conversation's key, for the tools' context. */
  conversation: string;
  agent: Agent;
  model: ModelClient;
  /**
   * The conversation before this turn, as it stands at each request (a compaction changes it
   * mid-turn): the summary of its older turns, if it was compacted, and the earlier turns a
   * request may carry after it, oldest first, each whole (its prompt, the messages steered to
   * it, its answers). Each request carries the summary and the latest of them that fit its budget.
   */
  history(): ConversationHistory;
  /**
   * Compacts the history at this step, before its model request, when its carried tokens pass
   * the agent's `compactAt` (`compactionDue`): summarises all but the latest `keep` earlier
   * turns by a model request of its own and stores the summary (`history.compacted`) through
   * `commit`, answering that commit's answer; null when it did not (the model failed it, say):
   * the step's request is then made as it is. Absent: the history is never compacted.
   */
  compact?(at: { turn: TurnState; step: number; keep: number }): Promise<StoredTurn | null>;
  /** The turn as stored when the run starts. */
  turn: TurnState;
  /**
   * Stores events of the turn durably, in one transaction, and answers the turn as stored
   * after them (`StoredTurn`): the store may add to them (steered messages taken at a step) or
   * replace the turn's end (a steer landed while the model wrote its final answer: the turn
   * takes one more step). The loop goes on only after it resolves; a rejection ends the run and
   * the turn resumes from what was stored.
   */
  commit(events: DomainEvent[]): Promise<StoredTurn>;
  /**
   * Stores a call of the built-in `schedule` tool made at `step`, as `commit` does: its result and
   * what it did to the conversation's schedules are decided together under the conversation's
   * lock, where its schedules are. Absent: such a call is answered that schedules are not kept here.
   */
  scheduleCall?(call: ToolCall, step: number): Promise<StoredTurn>;
  onToken?: (step: number, text: string) => void;
  /**
   * Runs before each model request. A rejection ends the run before the request is sent,
   * nothing stored, as a commit's does (the turn resumes from what was stored): the worker
   * checks there that it still owns the conversation after a pause.
   */
  beforeModelRequest?: () => Promise<void>;
  /**
   * The time now, as the runner reads it (the worker's clock; a test's own). A step reads it
   * once, at its start, and that is the step's time: an approval its calls request is requested
   * then (`requestedAt`, and `expiresAt` from it). The loop reads no clock of its own.
   */
  now(): Date;
  /** Aborting stops the model request and the tools in flight; nothing more is stored. */
  signal: AbortSignal;
  /** Raised when the conversation asks the turn to finish early: its tools see it (`ToolContext.windDown`). Default: never. */
  windDown?: AbortSignal;
  /** How many newer inputs wait behind the turn now (`ToolContext.pending`). Default: none. */
  pending?: () => number;
  /**
   * Whether nothing waits that the commit of a step's last tool result could add to the turn
   * (a steer to take, an ending): then the next model request is sent while that commit is in
   * flight, and used once the commit stored exactly the turn it was made for (`Speculation`).
   * Absent or false: the request waits for the commit, as every request did before.
   */
  quiet?: () => boolean;
  /** Told what became of each request sent ahead (`quiet`): used, or thrown away (a model request paid for and not used). */
  onAhead?: (outcome: 'used' | 'discarded') => void;
};
