import { z } from 'zod';
import { InputId } from '../conversation-key';
import { eventContract, namesAbout, namesAnswers, PendingInput } from '../event-parts';
import { StorableString } from '../storable-text';
import { envelope, inputKind } from './shared';

/** Stops the conversation's running turn (if any); what it had not taken is answered afterwards. */
export const StopInputV1 = z.object({
  ...envelope,
  type: z.literal('stop'),
  /** Also discard every pending input of the conversation (each is reported discarded, never answered). */
  discardPending: z.boolean().default(false),
  /** The turn the stop means: when it is no longer running, the stop stops (and discards) nothing. */
  turn: StorableString.min(1).max(200).optional(),
  /**
   * Ask the turn to wind down instead: its tools see `windDown` and may return what they have,
   * the model is asked once more, and the turn ends `completed` (`woundDown`). Absent: false.
   */
  graceful: z.boolean().optional(),
});
export type StopInput = z.infer<typeof StopInputV1>;

/** `POST /v1/conversations/{key}/stop`. */
export const StopBody = z
  .object({ discardPending: z.boolean().optional(), turn: StorableString.min(1).max(200).optional(), graceful: z.boolean().optional() })
  .strict();

export const StopDecisionAnswer = z
  .object({ turn: z.string().nullable() })
  .meta({ id: 'StopAnswer', description: 'The turn stopped; null when none ran, or the named turn no longer runs.' });
export type StopAnswer = z.infer<typeof StopDecisionAnswer>;

export const STOP = inputKind({
  record: StopInputV1,
  events: {
    /**
     * A stop was asked for: the turn (if one runs) ends `stopped` as soon as it can. A chat
     * that interrupts or rolls back the running turn asks for it too (`stop` is then its id).
     */
    'stop.requested': eventContract(
      z.object({
        stop: InputId,
        turn: z.string().nullable(),
        /**
         * `stop`: the turn ends `stopped` at once. `rollback`: the same, and its work is dropped from
         * the history later turns see. `interrupt`: it ends `superseded` at its next step, keeping
         * what it did. `wind-down` (a graceful stop): its tools see `windDown`, the model is asked
         * once more after its next step, and it ends `completed`. An interrupt winds its tools down
         * too. (Absent in early records: `stop`.)
         */
        mode: z.enum(['stop', 'rollback', 'interrupt', 'wind-down']).default('stop'),
      }),
      (data) => namesAnswers(data.stop),
    ),
    /** A stop from a subject that may not write: it stops and discards nothing. */
    'stop.refused': eventContract(z.object({ stop: InputId, code: z.enum(['forbidden']) }), (data) => namesAnswers(data.stop)),
    /** A stop with discardPending dropped this pending input; it is never answered. */
    'input.discarded': eventContract(z.object({ input: PendingInput, stop: InputId }), (data) => namesAbout(data.input.id)),
  },
});
