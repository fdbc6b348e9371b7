import type { ConversationEvent, EventDataOf, EventType } from '@rudder/contracts';
import { parseState, type ConversationState } from '@rudder/conversation';
import type { ApprovalRow, ConversationRow, InputRow, TranscriptRow, TurnRow } from '../read-models/entities';

/** The rows a batch may read or change, as they were before it. */
export type Rows = { conversations: ConversationRow[]; inputs: InputRow[]; turns: TurnRow[]; approvals: ApprovalRow[] };

/** What a batch changed: rows to upsert whole, and transcript rows to add. */
export type Changes = Rows & { transcript: TranscriptRow[] };

/** An event of one type. */
export type Of<T extends EventType> = Extract<ConversationEvent, { type: T }>;

export const rowKey = (conversation: string, id: string): string => `${conversation}\u0000${id}`;

/**
 * The rows a batch touches while it is folded, each kind by (conversation, id): a part of the
 * fold reads them, changes them in place and marks them changed (`put…`, `touch…`), and only the
 * changed ones are written back (`changes`), with the transcript rows it added.
 */
export class RowSet {
  readonly conversations: Map<string, ConversationRow>;
  private readonly inputs: Map<string, InputRow>;
  private readonly turns: Map<string, TurnRow>;
  private readonly approvals: Map<string, ApprovalRow>;
  private readonly changed = { conversations: new Set<string>(), inputs: new Set<string>(), turns: new Set<string>(), approvals: new Set<string>() };
  private readonly transcript: TranscriptRow[] = [];

  constructor(before: Rows) {
    this.conversations = new Map(before.conversations.map((r) => [r.key, { ...r, state: parseState(r.state) }]));
    this.inputs = new Map(before.inputs.map((r) => [rowKey(r.conversation, r.id), { ...r }]));
    this.turns = new Map(before.turns.map((r) => [rowKey(r.conversation, r.id), { ...r, steered: [...r.steered] }]));
    this.approvals = new Map(before.approvals.map((r) => [rowKey(r.conversation, r.approval), { ...r }]));
  }

  input(conversation: string, id: string): InputRow | undefined {
    return this.inputs.get(rowKey(conversation, id));
  }
  putInput(row: InputRow): void {
    this.inputs.set(rowKey(row.conversation, row.id), row);
    this.touchInput(row);
  }
  touchInput(row: InputRow): void {
    this.changed.inputs.add(rowKey(row.conversation, row.id));
  }

  turn(conversation: string, id: string): TurnRow | undefined {
    return this.turns.get(rowKey(conversation, id));
  }
  putTurn(row: TurnRow): void {
    this.turns.set(rowKey(row.conversation, row.id), row);
    this.touchTurn(row);
  }
  touchTurn(row: TurnRow): void {
    this.changed.turns.add(rowKey(row.conversation, row.id));
  }

  approval(conversation: string, approval: string): ApprovalRow | undefined {
    return this.approvals.get(rowKey(conversation, approval));
  }
  /** The approvals of one turn among the rows. */
  approvalsOf(conversation: string, turn: string): ApprovalRow[] {
    return [...this.approvals.values()].filter((row) => row.conversation === conversation && row.turn === turn);
  }
  putApproval(row: ApprovalRow): void {
    this.approvals.set(rowKey(row.conversation, row.approval), row);
    this.touchApproval(row);
  }
  touchApproval(row: ApprovalRow): void {
    this.changed.approvals.add(rowKey(row.conversation, row.approval));
  }

  touchConversation(row: ConversationRow): void {
    this.changed.conversations.add(row.key);
  }

  addTranscript(row: TranscriptRow): void {
    this.transcript.push(row);
  }

  changes(): Changes {
    const pick = <T>(rows: Map<string, T>, keys: Set<string>): T[] => [...keys].map((k) => rows.get(k) as T);
    return {
      conversations: pick(this.conversations, this.changed.conversations),
      inputs: pick(this.inputs, this.changed.inputs),
      turns: pick(this.turns, this.changed.turns),
      approvals: pick(this.approvals, this.changed.approvals),
      transcript: this.transcript,
    };
  }
}

/**
 * How a part of the fold folds an event type it shows: the rows it reads beside the inputs the
 * event is about (`INPUT_IDS_NAMED` of the contract says those), and what it changes.
 */
export type Fold<T extends EventType> = {
  /** The turns whose row it reads (`turns`), and the turns whose every approval it reads (`approvalsOf`). */
  reads?(data: EventDataOf<T>): { turns?: string[]; approvalsOf?: string[] };
  /** `conversation`: its row with the event folded in; `before`: its state before the event. */
  fold(rows: RowSet, event: Of<T>, conversation: ConversationRow, before: ConversationState): void;
};

/** A part of the fold: the event types it shows, each with its `Fold`. A type it does not list changes none of its rows. */
export type Folds = { readonly [T in EventType]?: Fold<T> };

/** Folds `event` by the part's fold of its type, if it has one. */
export function foldBy<T extends EventType>(folds: Folds, type: T, rows: RowSet, event: Of<T>, conversation: ConversationRow, before: ConversationState): void {
  folds[type]?.fold(rows, event, conversation, before);
}

/** The rows the part's fold of the event's type reads, if it has one. */
export function readsBy<T extends EventType>(folds: Folds, type: T, data: EventDataOf<T>): { turns?: string[]; approvalsOf?: string[] } {
  return folds[type]?.reads?.(data) ?? {};
}
