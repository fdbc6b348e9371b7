import type { CompanionStatus } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Conversations, Inputs, type ConversationRow, type InputRow } from '../read-models/entities';

/**
 * A conversation's status (`CompanionStatus` in contracts: the gateway's status plus the owner
 * and grants it authorizes by). An unknown conversation is an idle, empty one.
 *
 * Of the pending inputs (accepted, and not yet delivered, retracted or discarded; a rejected
 * input never was pending), in acceptance order, except that chats which interrupted or rolled
 * back the running turn come first (they run next; the latest such chat first):
 * - `steering`: the steers still waiting for the running turn: those the worker has not decided
 *   on yet, and those it landed on the turn that is running now.
 * - `queue`: every other one: chats, steers answered as turns of their own (landed false), and
 *   landed steers whose turn ended without taking them (stopped, failed): the worker answers
 *   those as turns of their own, so they sit in the queue at the place they were accepted.
 * A decision on a chat (a promoted follow-up) makes it a steer here too.
 * One statement, so the conversation and its inputs are read as of one moment.
 */
export async function readConversationStatus(readModels: DataSource, key: string): Promise<CompanionStatus> {
  const found = await readModels.manager
    .createQueryBuilder(Conversations, 'c')
    .leftJoinAndMapMany('c.pending', Inputs.options.name, 'i', "i.conversation = c.key AND i.state = 'pending'")
    .where('c.key = :key', { key })
    .orderBy('i.runsNext', 'DESC', 'NULLS LAST')
    .addOrderBy('i.position', 'ASC')
    .getOne();
  const conversation = found as (ConversationRow & { pending: InputRow[] }) | null;
  const running = conversation?.runningTurn ?? null;
  const pending = (conversation?.pending ?? []).map((i) => ({
    id: i.id,
    kind: i.steerLanded !== null ? ('steer' as const) : i.kind,
    text: i.text,
    steering: (i.kind === 'steer' && i.steerLanded === null) || (i.steerLanded === true && running !== null && i.steerTurn === running),
  }));
  return {
    key,
    running: running !== null && conversation?.runningStartedAt ? { turn: running, startedAt: conversation.runningStartedAt } : null,
    steering: pending.filter((i) => i.steering).map(({ id, text }) => ({ id, text })),
    queue: pending.filter((i) => !i.steering).map(({ id, kind, text }) => ({ id, kind, text })),
    lastInputId: conversation?.lastInputId ?? null,
    agent: conversation?.agent ?? null,
    owner: conversation?.owner ?? null,
    grants: Object.entries(conversation?.grants ?? {}).map(([subject, access]) => ({ subject, access })),
    position: conversation?.position ?? 0,
  };
}
