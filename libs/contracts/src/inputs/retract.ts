import { z } from 'zod';
import { InputId, MessageKind } from '../conversation-key';
import { eventContract, namesAnswers, PendingInput } from '../event-parts';
import { envelope, inputKind } from './shared';

/**
 * Takes back a pending input: `target` by id, or the latest pending one of a queue. `id` is
 * the retraction's own: its decision (`input.retracted` or `retract.refused`) names it.
 */
export const RetractInputV1 = z.object({
  ...envelope,
  type: z.literal('retract'),
  target: z.union([z.object({ id: InputId }), z.object({ latest: MessageKind })]),
});
export type RetractInput = z.infer<typeof RetractInputV1>;

/** `DELETE /v1/conversations/{key}/inputs/{id}` (or `?latest=chat|steer`) takes no body; its answer is the input taken back. */
export const RetractedAnswer = z.object({ id: z.string(), text: z.string() }).meta({ id: 'RetractAnswer', description: 'The pending input taken back.' });
export type RetractAnswer = z.infer<typeof RetractedAnswer>;

export const RETRACT = inputKind({
  record: RetractInputV1,
  events: {
    /** A pending input was taken back; it is never answered. */
    'input.retracted': eventContract(z.object({ input: PendingInput, retract: InputId }), (data) => ({ about: [data.input.id], answers: [data.retract] })),
    /** A retraction found nothing to take back: the input was delivered already, or is unknown. */
    'retract.refused': eventContract(
      z.object({ retract: InputId, target: InputId.nullable(), code: z.enum(['delivered', 'not_found', 'forbidden']) }),
      (data) => namesAnswers(data.retract),
    ),
  },
});
