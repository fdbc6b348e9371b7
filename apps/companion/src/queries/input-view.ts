import type { CompanionInput } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Inputs } from '../read-models/entities';

/** An input as the gateway checks idempotency against it (`CompanionInput` in contracts), or null. */
export async function readInput(readModels: DataSource, key: string, id: string): Promise<CompanionInput | null> {
  const row = await readModels.manager.findOneBy(Inputs, { conversation: key, id });
  if (!row) return null;
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
