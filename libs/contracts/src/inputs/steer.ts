import { z } from 'zod';
import { InputId } from '../conversation-key';
import { BodyText, envelope, inputKind, UserText } from './shared';

/** A message for the running turn of the conversation: taken at its next step, or answered as a turn of its own. */
export const SteerInputV1 = z.object({
  ...envelope,
  type: z.literal('steer'),
  text: UserText,
  ifLastInputId: InputId.optional(),
});
export type SteerInput = z.infer<typeof SteerInputV1>;

/** `POST /v1/conversations/{key}/steer`. */
export const SteerBody = z.object({ text: BodyText, id: InputId.optional(), ifLastInputId: InputId.optional() }).strict();
export type SteerBody = z.infer<typeof SteerBody>;

export const SteerDecisionAnswer = z
  .object({ id: z.string(), turn: z.string().nullable(), landed: z.boolean() })
  .meta({ id: 'SteerAnswer', description: '`landed`: `turn` shows it to the model before it ends; otherwise it is answered as a turn of its own.' });
/** The worker's decision: `landed` means `turn` shows it to the model before it ends. */
export type SteerAnswer = z.infer<typeof SteerDecisionAnswer>;

/** Its answers are the messages' events (`events.ts`: `input.accepted`, `steer.accepted`, …). */
export const STEER = inputKind({ record: SteerInputV1, events: {} });
