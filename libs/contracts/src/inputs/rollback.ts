import { z } from 'zod';
import { InputId } from '../conversation-key';
import { eventContract, namesAnswers } from '../event-parts';
import { StorableString } from '../storable-text';
import { envelope, inputKind } from './shared';

/**
 * How many of the last ended turns a rollback can reach: the conversation's state keeps that
 * many (their ids, and the plan before each one that changed it), so a rollback is decided on
 * the state under the lock, with nothing read from the log.
 */
export const ROLLBACK_TURNS_MAX = 16;

/** A turn's id as a rollback names it. */
const TurnId = StorableString.min(1).max(200);

/** What a rollback asks to roll back: the last `turns` turns, or every turn after `toTurn` (which stays the last one). */
export const RollbackAsked = z.union([
  z.object({ turns: z.number().int().min(1).max(ROLLBACK_TURNS_MAX) }).strict(),
  z.object({ toTurn: TurnId }).strict(),
]);
export type RollbackAsked = z.infer<typeof RollbackAsked>;

/**
 * Rolls back the conversation's last ended turns: they leave what the model is sent later
 * (history, budget, compaction), the transcript shows them as rolled back, and their changes to
 * the plan are undone. Nothing is deleted. `id` is the rollback's own (the client's: the same
 * id again is the same rollback).
 */
export const RollbackInputV1 = z.object({
  ...envelope,
  type: z.literal('rollback'),
  asked: RollbackAsked,
  /** Refused (`precondition_failed`) unless the last turn that ended (and is not rolled back) is this one. */
  ifLastTurn: TurnId.optional(),
  /** While a turn runs the rollback is refused (`busy`), unless this asks to stop it first: it is then stopped and rolled back with the rest. */
  stopRunning: z.boolean().optional(),
});
export type RollbackInput = z.infer<typeof RollbackInputV1>;

/** `POST /v1/conversations/{key}/rollback`: `turns` or `toTurn`. */
export const RollbackBody = z
  .object({
    turns: z.number().int().min(1).max(ROLLBACK_TURNS_MAX).optional(),
    toTurn: TurnId.optional(),
    ifLastTurn: TurnId.optional(),
    stopRunning: z.boolean().optional(),
    id: InputId.optional(),
  })
  .strict()
  .refine((b) => (b.turns === undefined) !== (b.toTurn === undefined), { message: 'give either turns or toTurn, not both and not neither' });
export type RollbackBody = z.infer<typeof RollbackBody>;

export const RolledBackAnswer = z
  .object({
    turns: z.array(z.string()).describe('The turns rolled back, oldest first (the running turn last, when `stopRunning` stopped it).'),
    stopped: z.string().nullable().describe('The running turn `stopRunning` stopped (it is rolled back too); null when none ran.'),
  })
  .meta({ id: 'RollbackAnswer', description: 'The turns rolled back: they leave every later model request; the transcript shows them only with `?include=rolledBack`.' });
export type RollbackAnswer = z.infer<typeof RolledBackAnswer>;

export const ROLLBACK = inputKind({
  record: RollbackInputV1,
  events: {
    /**
     * The last ended turns `turns` (oldest first) were rolled back, as `asked`; `stopped` the
     * running turn stopped first and rolled back with them (its `stop.requested`, mode
     * `rollback`, comes just before). Their changes to the plan are undone by a `todos.updated`
     * without a call just after, when they made any.
     */
    'turns.rolledBack': eventContract(
      z.object({ rollback: InputId, asked: RollbackAsked, turns: z.array(z.string()), stopped: z.string().nullable() }),
      (data) => namesAnswers(data.rollback),
    ),
    /**
     * A rollback changed nothing: its subject may not write (`forbidden`); the last turn that
     * ended is not `ifLastTurn` (`precondition_failed`, `lastTurn` the one it is); a turn runs
     * and it did not ask to stop it (`busy`, `running` the turn); `toTurn` is not a turn that
     * ended and was not rolled back, among the last ones a rollback reaches (`not_found`); it
     * asks for more turns than there are to roll back (`too_far`, `available` how many).
     */
    'rollback.refused': eventContract(
      z.object({
        rollback: InputId,
        asked: RollbackAsked,
        code: z.enum(['forbidden', 'precondition_failed', 'busy', 'not_found', 'too_far']),
        message: z.string(),
        lastTurn: z.string().nullable().optional(),
        running: z.string().optional(),
        available: z.number().int().nonnegative().optional(),
      }),
      (data) => namesAnswers(data.rollback),
    ),
  },
});
