import { z } from 'zod';
import { InputId } from '../conversation-key';
import { eventContract, namesAnswers } from '../event-parts';
import { envelope, inputKind } from './shared';

/**
 * Moves a pending follow-up (a chat waiting in the queue) to another place in the queue: just
 * before the pending input `before`, or to the end (`before: null`). `id` is the move's own
 * (the client's: the same id again is the same move); `target` the follow-up it moves.
 */
export const MoveInputV1 = z.object({
  ...envelope,
  type: z.literal('move'),
  target: InputId,
  before: InputId.nullable(),
});
export type MoveInput = z.infer<typeof MoveInputV1>;

/** `POST /v1/conversations/{key}/inputs/{id}/move`: `before`, the pending input it goes just before (null: to the end). */
export const MoveBody = z
  .object({
    before: InputId.nullable(),
    id: InputId.optional(),
  })
  .strict();
export type MoveBody = z.infer<typeof MoveBody>;

export const MovedAnswer = z
  .object({
    id: z.string(),
    before: z.string().nullable().describe('The pending input it now waits just before; null: it is the last.'),
    position: z.number().int().nonnegative().describe('How many inputs wait in the queue ahead of it now (0: it is the next turn once no turn runs).'),
  })
  .meta({ id: 'MoveAnswer', description: 'The follow-up as it waits now: its place in the queue.' });
export type MoveAnswer = z.infer<typeof MovedAnswer>;

export const MOVE = inputKind({
  record: MoveInputV1,
  events: {
    /** A pending follow-up `input` moved to just before `before` (null: to the end of the queue); `position` inputs wait ahead of it now. */
    'input.moved': eventContract(
      z.object({ move: InputId, input: InputId, before: InputId.nullable(), position: z.number().int().nonnegative() }),
      (data) => namesAnswers(data.move),
    ),
    /**
     * A move changed nothing: its subject may not write (`forbidden`); its target is not pending
     * (`not_found`: delivered, taken back, dropped, refused, or unknown); its target waits but is
     * not a follow-up (`not_follow_up`: a steer); `before` is not another input waiting in the
     * queue (`before`).
     */
    'move.refused': eventContract(
      z.object({
        move: InputId,
        target: InputId,
        before: InputId.nullable(),
        code: z.enum(['forbidden', 'not_found', 'not_follow_up', 'before']),
        message: z.string(),
      }),
      (data) => namesAnswers(data.move),
    ),
  },
});
