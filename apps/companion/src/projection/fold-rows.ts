import { inputIdsNamedBy, type ConversationEvent } from '@rudder/contracts';
import { initialState } from '@rudder/conversation';
import type { ConversationRow } from '../read-models/entities';
import { foldState } from './conversation-state';
import { APPROVAL_FOLDS } from './fold-approvals';
import { INPUT_FOLDS } from './fold-inputs';
import { TURN_FOLDS } from './fold-turns';
import { foldBy, readsBy, rowKey, RowSet, type Changes, type Folds, type Rows } from './row-set';

/**
 * The pure fold of a batch of events over the read models' rows (`read-models/entities.ts`).
 * `fold-events.ts` loads the rows a batch touches, calls `foldRows`, and writes back what changed
 * (and the events' copies); this file and its parts do no I/O, so the projection rules are
 * tested without a database. The queue and steering rules are not here: a conversation's status
 * is its `ConversationState`, folded by the worker's own `evolve` (`foldState`).
 */

export type { Changes, Rows };

/**
 * The parts of the fold, each the event types it shows and how: the inputs and their receipts
 * (`fold-inputs.ts`), the turns and the transcript (`fold-turns.ts`), the approvals
 * (`fold-approvals.ts`). An event type none of them lists changes the conversation's state and
 * position only, and is copied for replay (`conversation.opened`, `access.granted`,
 * `stop.requested`, the refusals of controls, `guard.failed`, `tool.started`, …).
 */
const PARTS: readonly Folds[] = [INPUT_FOLDS, TURN_FOLDS, APPROVAL_FOLDS];

/** Which rows folding these events may read. */
export type Needed = {
  conversations: string[];
  inputs: { conversation: string; id: string }[];
  turns: { conversation: string; id: string }[];
  /** The turns whose every approval it may read (`id` the turn's). */
  approvals: { conversation: string; id: string }[];
};

/** The rows a batch reads: its conversations, the inputs its events are about (as the contract declares them), and what the parts read. */
export function rowsNeeded(events: readonly ConversationEvent[]): Needed {
  const conversations = new Set<string>();
  const inputs = new Map<string, { conversation: string; id: string }>();
  const turns = new Map<string, { conversation: string; id: string }>();
  const approvals = new Map<string, { conversation: string; id: string }>();
  const add = (rows: Map<string, { conversation: string; id: string }>, conversation: string, ids: readonly string[] = []) => {
    for (const id of ids) rows.set(rowKey(conversation, id), { conversation, id });
  };
  for (const event of events) {
    const c = event.conversation;
    conversations.add(c);
    add(inputs, c, inputIdsNamedBy(event).about);
    for (const part of PARTS) {
      const reads = readsBy(part, event.type, event.data);
      add(turns, c, reads.turns);
      add(approvals, c, reads.approvalsOf);
    }
  }
  return { conversations: [...conversations], inputs: [...inputs.values()], turns: [...turns.values()], approvals: [...approvals.values()] };
}

/**
 * Folds new events (each applied once, in position order within a conversation, every one of a
 * type the contract knows) over the rows they touch. Each event evolves its conversation's
 * state (`foldState`: owner, agent, grants, the running turn, steering, the queue, the last
 * input) and its row keeps the position (its last event's) and when its running turn started;
 * then each part of the fold that shows the event's type folds it (`PARTS`).
 */
export function foldRows(before: Rows, events: readonly ConversationEvent[]): Changes {
  const rows = new RowSet(before);
  for (const event of events) {
    const before = rows.conversations.get(event.conversation)?.state ?? initialState();
    const conversation = foldConversation(rows, event);
    for (const part of PARTS) foldBy(part, event.type, rows, event, conversation, before);
  }
  return rows.changes();
}

/** The conversation's position, its state as `evolve` folds it, and when its running turn started. */
function foldConversation(rows: RowSet, event: ConversationEvent): ConversationRow {
  const key = event.conversation;
  let row = rows.conversations.get(key);
  if (!row) rows.conversations.set(key, (row = { key, position: 0, state: initialState(), runningStartedAt: null }));
  row.position = Math.max(row.position, event.position);
  const was = row.state.runningTurn;
  row.state = foldState(row.state, event);
  if (row.state.runningTurn !== was) row.runningStartedAt = row.state.runningTurn === null ? null : event.at;
  rows.touchConversation(row);
  return row;
}
