import { QueueItem, SteeringItem, type CompanionStatus } from '@rudder/contracts';
import { initialState, parseState, scheduleItem, type ConversationState } from '@rudder/conversation';
import type { DataSource } from 'typeorm';
import { Conversations, Inputs, type ConversationRow, type InputRow } from '../read-models/entities';

/**
 * A conversation's status (`CompanionStatus` in contracts: the gateway's status plus the owner
 * and grants it authorizes by), read from its state as the worker's `evolve` folds it. An
 * unknown conversation is an idle, empty one.
 * - `steering`: the steers that landed on the running turn and are not taken yet, in the order
 *   the turn takes them, then a steer the worker has not decided on yet (its decision is the
 *   event after its acceptance, which a batch may not hold yet).
 * - `queue`: what waits to be a turn of its own, in the order the turns run: chats, steers
 *   answered as turns of their own, steers their turn ended without taking; a chat that
 *   interrupted or rolled back the running turn first.
 * A chat the worker decided on as a steer (a promoted follow-up) shows as a steer, landed or
 * not: its input row holds the decision. One statement, so the state and the decisions are read
 * as of one moment.
 */
export async function readConversationStatus(readModels: DataSource, key: string): Promise<CompanionStatus> {
  const found = (await readModels.manager
    .createQueryBuilder(Conversations, 'c')
    .leftJoinAndMapMany('c.decided', Inputs.options.name, 'i', "i.conversation = c.key AND i.state = 'pending' AND i.steerLanded IS NOT NULL")
    .where('c.key = :key', { key })
    .getOne()) as (ConversationRow & { decided: InputRow[] }) | null;
  const state = found ? parseState(found.state) : initialState();
  return statusOf(key, state, {
    runningStartedAt: found?.runningStartedAt ?? null,
    position: found?.position ?? 0,
    decided: new Set((found?.decided ?? []).map((i) => i.id)),
  });
}

/**
 * The status of a conversation in `state` (the decider's fold), beside what its rows hold: when
 * the running turn started, the position folded, and which pending inputs the worker decided on
 * as steers. The one mapping from state to status: the fold-equivalence test holds the rows'
 * status against this of the log's fold.
 */
export function statusOf(
  key: string,
  state: ConversationState,
  rows: { runningStartedAt: string | null; position: number; decided: ReadonlySet<string> },
): CompanionStatus {
  return {
    key,
    running: state.runningTurn !== null && rows.runningStartedAt ? { turn: state.runningTurn, startedAt: rows.runningStartedAt } : null,
    // What the status shows of a pending input is what the contract's items name (`SteeringItem`, `QueueItem`).
    steering: [...state.steers, ...(state.undecided ? [state.undecided] : [])].map((pending) => SteeringItem.parse(pending)),
    queue: state.queue.map((pending) => QueueItem.parse({ ...pending, kind: rows.decided.has(pending.id) ? 'steer' : pending.kind })),
    lastInputId: state.lastInputId,
    agent: state.agent,
    context: { carriedTokens: state.carried?.tokens ?? null, maxTokens: state.carried?.maxTokens ?? null, lastCompaction: state.compaction },
    owner: state.owner,
    grants: Object.entries(state.grants).map(([subject, access]) => ({ subject, access })),
    position: rows.position,
    todos: state.todos.items,
    // The hold a `{debounceMs}` queue is under, while something waits in it.
    heldUntil: state.queue.length > 0 ? state.heldUntil : null,
    schedules: state.schedules.map(scheduleItem),
    awaiting: state.awaiting.map(({ approval, turn, callId, tool, arguments: args, requestedAt, expiresAt }) => ({ approvalId: approval, turn, callId, tool, arguments: args, requestedAt, expiresAt })),
  };
}
