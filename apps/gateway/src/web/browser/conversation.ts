import type { StreamEvent } from '@rudder/client';
import { ROLLBACK_TURNS_MAX, type ConversationStatus, type ScheduleItem, type TodoItem, type TranscriptItem } from '@rudder/contracts';

/** What the page knows of the open conversation. */
export type Conversation = {
  key: string;
  stop: AbortController;
  transcript: TranscriptItem[];
  status: ConversationStatus | null;
  /** The running turn and the tool it runs, from the stream. */
  running: string | null;
  tool: string | null;
  /** How the latest turn that ended, ended (completed, stopped…). */
  ended: string | null;
  /** The streamed text of each step not yet in the transcript (`turn:step`), and the steps stored since. */
  live: Map<string, string>;
  stored: Set<string>;
  /** The turns that ended: their steps are all in the transcript. */
  endedTurns: Set<string>;
  /**
   * The turns that ended and were not rolled back, oldest first (at most the last 16, as many
   * as a rollback reaches): "Undo last answer" rolls back the last one, if it still is
   * (`ifLastTurn`). `rolledBack`: the turns rolled back, their ends not counted.
   */
  lastTurns: string[];
  rolledBack: Set<string>;
  /** The waiting messages being edited, by input id: the box with the new text (kept across renders). */
  edits: Map<string, Edit>;
  /** What became of an edit refused because its message no longer waits, by input id: shown on the message. */
  notes: Map<string, string>;
  refreshing: Promise<void> | null;
  again: boolean;
  /** Whether the conversation was in this browser's list before it was opened now (its recap may show). */
  reopened: boolean;
  recap: string;
  /** The suggested next messages under the last answer, and the turn they follow (asked once per turn). */
  suggestions: string[];
  suggestedAfter: string | null;
  /** The agent's plan, as the last `todos.updated` left it. */
  todos: TodoItem[];
  /** The calls that waited or wait for a person's approval, by approval id, in the order they were asked for. */
  approvals: Map<string, Approval>;
  /** Its schedules as last read (`GET …/schedules`), and whether a `schedule.*` event came since (the next read reads them again). */
  schedules: ScheduleItem[];
  schedulesStale: boolean;
};

/**
 * A waiting message being edited: its kind and text as they were when the edit began, its box
 * (made by the view, kept across renders: the text being typed stays), and whether the edit is
 * on its way.
 */
export type Edit = { kind: 'chat' | 'steer'; text: string; box: HTMLTextAreaElement | null; sending: boolean };

/** A call that waits, or waited, for a person's approval, and what became of it. */
export type Approval = {
  id: string;
  turn: string;
  /** Its step (null when it is known from the status only, which does not say). */
  step: number | null;
  callId: string;
  tool: string;
  arguments: string;
  expiresAt: string | null;
  /** Null while it waits; a decision (here, elsewhere, or its timeout: `subject` null); or closed unrun with this result. */
  outcome: null | { decision: 'approve' | 'deny'; reason: string | null; arguments: string | null; subject: string | null } | { closed: string };
  /** A decision of this page is on its way. */
  sending: boolean;
  /** Its card, kept across renders (a reason being typed stays). */
  card: ApprovalCard | null;
};
export type ApprovalCard = { root: HTMLElement; actions: HTMLElement; outcome: HTMLElement; edit: HTMLTextAreaElement; reason: HTMLInputElement; buttons: HTMLButtonElement[] };

/** A conversation as the page opens it: nothing read yet. */
export function openedConversation(key: string, reopened: boolean): Conversation {
  return {
    key,
    stop: new AbortController(),
    transcript: [],
    status: null,
    running: null,
    tool: null,
    ended: null,
    live: new Map(),
    stored: new Set(),
    endedTurns: new Set(),
    lastTurns: [],
    rolledBack: new Set(),
    edits: new Map(),
    notes: new Map(),
    refreshing: null,
    again: false,
    reopened,
    recap: '',
    suggestions: [],
    suggestedAfter: null,
    todos: [],
    approvals: new Map(),
    schedules: [],
    schedulesStale: true,
  };
}

/**
 * Folds one event of the stream into what the page knows; says what the page does next: show
 * it (`render`: a token, the plan), read the transcript and the status again (`refresh`), or
 * nothing (a token of a step the transcript has whole).
 */
export function applyEvent(c: Conversation, event: StreamEvent): 'render' | 'refresh' | 'nothing' {
  switch (event.type) {
    case 'token': {
      const step = `${event.data.turn}:${event.data.step}`;
      // Tokens and events are two topics: a step's last tokens may come after the event that
      // stored it. The transcript has that step whole by then; a fragment would linger.
      if (c.stored.has(step) || c.endedTurns.has(event.data.turn)) return 'nothing';
      c.live.set(step, (c.live.get(step) ?? '') + event.data.text);
      return 'render';
    }
    case 'turn.started':
      c.running = event.data.turn;
      break;
    case 'tool.started':
      c.tool = event.data.call.name;
      break;
    case 'tool.ended': {
      c.tool = null;
      // A call that still waited got its result without a decision: its turn closed it unrun.
      const { turn, step, callId, result } = event.data;
      for (const a of c.approvals.values()) {
        if (a.outcome === null && a.turn === turn && a.callId === callId && (a.step === null || a.step === step)) a.outcome = { closed: result };
      }
      break;
    }
    case 'approval.requested': {
      const { approval, turn, step, call, expiresAt } = event.data;
      const known = c.approvals.get(approval);
      if (known) known.step = step;
      else c.approvals.set(approval, { id: approval, turn, step, callId: call.id, tool: call.name, arguments: call.arguments, expiresAt, outcome: null, sending: false, card: null });
      break;
    }
    case 'approval.decided': {
      const a = c.approvals.get(event.data.approval);
      const { decision, reason, arguments: edited, subject } = event.data;
      if (a && (a.outcome === null || !('closed' in a.outcome))) a.outcome = { decision, reason, arguments: edited, subject };
      break;
    }
    case 'model.replied':
      c.stored.add(`${event.data.turn}:${event.data.step}`);
      break;
    case 'todos.updated':
      c.todos = event.data.items;
      return 'render';
    case 'schedule.made':
    case 'schedule.changed':
    case 'schedule.cancelled':
    case 'schedule.fired':
    case 'schedule.skipped':
      c.schedulesStale = true;
      break;
    case 'stop.requested':
      if (event.data.mode === 'rollback' && event.data.turn !== null) rollBack(c, [event.data.turn]);
      break;
    case 'turns.rolledBack':
      rollBack(c, event.data.turns);
      break;
    case 'turn.ended':
      if (!c.rolledBack.has(event.data.turn)) c.lastTurns = [...c.lastTurns, event.data.turn].slice(-ROLLBACK_TURNS_MAX);
      c.running = null;
      c.tool = null;
      c.ended = event.data.status;
      c.endedTurns.add(event.data.turn);
      for (const a of c.approvals.values()) if (a.turn === event.data.turn && a.outcome === null) a.outcome = { closed: `not run: the turn ended (${event.data.status}) before anyone decided` };
      for (const step of c.live.keys()) if (step.startsWith(`${event.data.turn}:`)) c.stored.add(step);
      break;
  }
  return 'refresh';
}

/** Turns rolled back: no longer the last answers, and their ends (a running one's, to come) not counted. */
function rollBack(c: Conversation, turns: string[]): void {
  for (const turn of turns) c.rolledBack.add(turn);
  c.lastTurns = c.lastTurns.filter((turn) => !c.rolledBack.has(turn));
}

/**
 * Takes what was read again: the transcript, the status (the calls waiting as it lists them: the
 * stream may not have brought them yet), and lets go of the streamed text of the steps that
 * were stored when the read began (`done`): the transcript has them now.
 */
export function applyRead(c: Conversation, transcript: TranscriptItem[], status: ConversationStatus | null, done: ReadonlySet<string>): void {
  c.transcript = transcript;
  c.status = status;
  for (const a of status?.awaiting ?? []) {
    if (!c.approvals.has(a.approvalId)) {
      c.approvals.set(a.approvalId, { id: a.approvalId, turn: a.turn, step: null, callId: a.callId, tool: a.tool, arguments: a.arguments, expiresAt: a.expiresAt, outcome: null, sending: false, card: null });
    }
  }
  for (const step of done) c.live.delete(step);
  if (c.status?.running) c.suggestions = [];
}
