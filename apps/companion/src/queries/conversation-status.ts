import type { CompanionStatus } from '@rudder/contracts';
import { initialState, parseState } from '@rudder/conversation';
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
  const decided = new Set((found?.decided ?? []).map((i) => i.id));
  return {
    key,
    running: state.runningTurn !== null && found?.runningStartedAt ? { turn: state.runningTurn, startedAt: found.runningStartedAt } : null,
    steering: [...state.steers, ...(state.undecided ? [state.undecided] : [])].map(({ id, text }) => ({ id, text })),
    queue: state.queue.map(({ id, kind, text }) => ({ id, kind: decided.has(id) ? ('steer' as const) : kind, text })),
    lastInputId: state.lastInputId,
    agent: state.agent,
    context: { carriedTokens: state.carried?.tokens ?? null, maxTokens: state.carried?.maxTokens ?? null, lastCompaction: state.compaction },
    owner: state.owner,
    grants: Object.entries(state.grants).map(([subject, access]) => ({ subject, access })),
    position: found?.position ?? 0,
  };
}
