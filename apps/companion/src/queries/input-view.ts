import type { CompanionInput } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Conversations, Inputs, type InputRow } from '../read-models/entities';

/** An input as the gateway checks idempotency against it (`CompanionInput` in contracts), or null. */
export async function readInput(readModels: DataSource, key: string, id: string): Promise<CompanionInput | null> {
  const row = await readModels.manager.findOneBy(Inputs, { conversation: key, id });
  return row ? inputOf(row) : null;
}

/**
 * The input, or the position the view of its conversation had reached without it: then the
 * input, if it exists, was accepted or refused after that position. The position is read before
 * the input is looked for again (a fold commits an input's row with its conversation's position),
 * so nothing up to it can hold the input.
 */
export async function readInputOrPosition(readModels: DataSource, key: string, id: string): Promise<CompanionInput | { unseenUpTo: number }> {
  const found = await readInput(readModels, key, id);
  if (found) return found;
  const conversation = await readModels.manager.findOne(Conversations, { select: { position: true }, where: { key } });
  const again = await readInput(readModels, key, id);
  return again ?? { unseenUpTo: Number(conversation?.position ?? 0) };
}

function inputOf(row: InputRow): CompanionInput {
  return {
    id: row.id,
    kind: row.kind,
    // A refusal keeps only the digest of its text.
    ...(row.state === 'rejected' && row.digest !== null ? { digest: row.digest } : { text: row.text }),
    ...(row.messages === null ? {} : { messages: row.messages }),
    subject: row.subject,
    steer: row.steerLanded === null ? null : { turn: row.steerTurn, landed: row.steerLanded },
    state: row.state,
    rejection: row.rejectionCode === null ? null : { code: row.rejectionCode, message: row.rejectionMessage ?? '' },
    position: Number(row.position),
  };
}
