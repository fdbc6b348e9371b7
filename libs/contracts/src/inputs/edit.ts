import { z } from 'zod';
import { InputId, MessageKind } from '../conversation-key';
import { Digest, eventContract, namesAnswers } from '../event-parts';
import { BodyText, envelope, inputKind, UserText } from './shared';

/**
 * Edits a pending input — a follow-up waiting in the queue, or a steer not taken yet — to new
 * text, in its kind and place; its revision goes up by one (0 as sent). `id` is the edit's own
 * (the client's: the same id again is the same edit); `target` the input it edits.
 */
export const EditInputV1 = z.object({
  ...envelope,
  type: z.literal('edit'),
  target: InputId,
  /** The new text: `text` (a steer's, or a chat's of one message), or `messages` (a chat's: one or more). */
  to: z.union([z.object({ text: UserText }).strict(), z.object({ messages: z.array(UserText).min(1) }).strict()]),
  /** Refused (`precondition_failed`) unless the input's revision is this one. */
  ifRevision: z.number().int().nonnegative().optional(),
});
export type EditInput = z.infer<typeof EditInputV1>;

/** The messages an edit gives its input. */
export const editedMessages = (input: Pick<EditInput, 'to'>): string[] => ('text' in input.to ? [input.to.text] : input.to.messages);

/** `PATCH /v1/conversations/{key}/inputs/{id}`: `text` (a steer, or a chat of one message) or `messages` (a chat). */
export const EditBody = z
  .object({
    text: BodyText.optional(),
    messages: z.array(BodyText).min(1, 'messages must hold at least one message').max(32).optional(),
    id: InputId.optional(),
    ifRevision: z.number().int().nonnegative().optional(),
  })
  .strict()
  .refine((b) => (b.text === undefined) !== (b.messages === undefined), {
    message: 'give either text or messages, not both and not neither',
  });
export type EditBody = z.infer<typeof EditBody>;

export const EditedAnswer = z
  .object({ id: z.string(), kind: MessageKind, text: z.string(), revision: z.number().int().positive() })
  .meta({ id: 'EditAnswer', description: 'The input as edited: its kind and place are its own, its text the new one, its revision one more.' });
export type EditAnswer = z.infer<typeof EditedAnswer>;

export const EDIT = inputKind({
  record: EditInputV1,
  events: {
    /** A pending input was edited: `input` as it waits now (its new text and messages), at `revision`. */
    'input.edited': eventContract(
      z.object({
        edit: InputId,
        input: z.object({ id: InputId, kind: MessageKind, text: z.string(), messages: z.array(z.string()) }),
        revision: z.number().int().positive(),
      }),
      (data) => ({ about: [data.input.id], answers: [data.edit] }),
    ),
    /**
     * An edit changed nothing: its subject may not write (`forbidden`); its target is not
     * pending (`not_found`: delivered, taken back, dropped, refused, or unknown); its revision
     * is not `ifRevision` (`precondition_failed`, `revision` the input's); its text is not the
     * input's shape (`shape`: `messages` for a steer, `text` for a chat of several messages); the
     * text is past the bounds (`queue_full`) or the agent's input guard refused it (`refused`).
     * Keeps the digest of the new text, not the text, as a chat's refusal does.
     */
    'edit.refused': eventContract(
      z.object({
        edit: InputId,
        target: InputId,
        code: z.enum(['forbidden', 'not_found', 'precondition_failed', 'shape', 'queue_full', 'refused']),
        message: z.string(),
        digest: Digest,
        revision: z.number().int().nonnegative().optional(),
      }),
      (data) => namesAnswers(data.edit),
    ),
  },
});
