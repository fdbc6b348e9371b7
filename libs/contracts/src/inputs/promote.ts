import { z } from 'zod';
import { InputId } from '../conversation-key';
import { eventContract, namesAnswers } from '../event-parts';
import { envelope, inputKind } from './shared';

/** Turns a pending follow-up into a steer of the running turn; `id` is the promotion's own. */
export const PromoteInputV1 = z.object({
  ...envelope,
  type: z.literal('promote'),
  target: InputId,
});
export type PromoteInput = z.infer<typeof PromoteInputV1>;

/**
 * `POST /v1/conversations/{key}/inputs/{id}/promote` takes no body (or `{}`); its answer is the
 * steer decision on the follow-up (`SteerDecisionAnswer`, `steer.accepted`).
 */
export const PROMOTE = inputKind({
  record: PromoteInputV1,
  events: {
    /** A promotion found no pending follow-up under that id (delivered, retracted, a steer, or unknown). */
    'promote.refused': eventContract(
      z.object({ promote: InputId, target: InputId, code: z.enum(['delivered', 'not_found', 'forbidden']) }),
      (data) => namesAnswers(data.promote),
    ),
  },
});
