import { z } from 'zod';
import { ConversationKey, InputId } from '../conversation-key';
import { eventContract, namesAnswers } from '../event-parts';
import { StorableString } from '../storable-text';
import { envelope, inputKind } from './shared';

/** A turn's id as a fork names it. */
const TurnId = StorableString.min(1).max(200);

/**
 * Forks a conversation: the record's `conversation` is the new one (`into`), so the worker that
 * owns it decides the fork under its lock, reading the source (`from`) from the event store.
 * `atTurn`: the source's turn the fork's history ends with (absent: the latest that ended).
 * `id` is the fork's own (the same id again is the same fork).
 */
export const ForkInputV1 = z.object({
  ...envelope,
  type: z.literal('fork'),
  from: ConversationKey,
  atTurn: TurnId.optional(),
  /**
   * The nonce of the conversation key the Responses door derived for this fork's subject (a
   * `previous_response_id` that is not the latest forks): a derived key (`responses/…`) is
   * opened only by an input whose subject and nonce derive it, as a chat's `derivedFrom`.
   */
  derivedFrom: InputId.optional(),
});
export type ForkInput = z.infer<typeof ForkInputV1>;

/** `POST /v1/conversations/{key}/fork`: the new conversation's key, and the source's turn to fork at. */
export const ForkBody = z
  .object({
    into: ConversationKey,
    atTurn: TurnId.optional(),
    id: InputId.optional(),
  })
  .strict();
export type ForkBody = z.infer<typeof ForkBody>;

export const ForkedAnswer = z
  .object({
    key: z.string().describe('The new conversation (`into`).'),
    from: z.string().describe('The conversation it was forked from.'),
    atTurn: z.string().describe("The source's turn its history ends with."),
  })
  .meta({ id: 'ForkAnswer', description: "The new conversation: its history is the source's up to and including `atTurn`; its owner is the subject that forked it." });
export type ForkAnswer = z.infer<typeof ForkedAnswer>;

/** A message of an earlier turn as the model is sent it: the prompt and the steered messages (user), the replies (assistant). */
const HistoryMessage = z.object({ role: z.enum(['user', 'assistant']), content: z.string() });

/**
 * An earlier turn of the source as the fork's history holds it: its messages, their tokens when
 * known, and the position of its `turn.ended` in the source's log (positions are global, so
 * every one is before the fork's own events).
 */
export const ForkedTurn = z.object({ turn: z.string(), end: z.number().int().nonnegative(), messages: z.array(HistoryMessage), tokens: z.number().optional() });
export type ForkedTurn = z.infer<typeof ForkedTurn>;

export const FORK = inputKind({
  record: ForkInputV1,
  events: {
    /**
     * The conversation was forked from `from` at its turn `atTurn` (whose `turn.ended` is at
     * `through` in the source's log): it follows the fork's `conversation.opened` (owner: the
     * forking subject; grants are not copied), and copies what the source's later model
     * requests carried of the turns up to it: the summary of the oldest (when one covered
     * turns up to `atTurn`), the turns after it (`history`, oldest first; rolled-back turns are
     * not among them). The plan as it was then follows it, when it has items (`todos.updated`
     * without a call).
     */
    'conversation.forked': eventContract(
      z.object({
        fork: InputId,
        from: z.string(),
        atTurn: z.string(),
        through: z.number().int().nonnegative(),
        history: z.array(ForkedTurn),
        summary: z.object({ text: z.string(), through: z.string(), end: z.number().int().nonnegative(), turns: z.number().int().nonnegative() }).nullable(),
      }),
      (data) => namesAnswers(data.fork),
    ),
    /**
     * A fork made nothing: the source has no conversation, or the subject may not read it
     * (`not_found`, `forbidden`), or `into` is a key the Responses door derives that this fork
     * may not open (`forbidden`); `into` is a conversation already (`conflict`); `atTurn` is
     * not a turn of the source that ended and was not rolled back (`not_found`) or is still
     * running (`busy`); the source has no turn that ended (`not_found`).
     */
    'fork.refused': eventContract(
      z.object({
        fork: InputId,
        from: z.string(),
        atTurn: z.string().nullable(),
        code: z.enum(['forbidden', 'not_found', 'conflict', 'busy']),
        message: z.string(),
      }),
      (data) => namesAnswers(data.fork),
    ),
  },
});
