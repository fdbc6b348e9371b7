import { z } from 'zod';
import { InputId, Subject } from '../conversation-key';
import { eventContract, NAMES_NONE, namesAbout, namesAnswers } from '../event-parts';
import { BodyText, envelope, inputKind, UserText } from './shared';

/** Schedules one conversation may have at once: each lives in its state, which stays small. */
export const SCHEDULES_MAX = 20;
/** The characters of a schedule's text (all its messages together): it waits in the conversation's state until it fires. */
export const SCHEDULE_TEXT_MAX = 4000;
/** The longest schedule id: a firing's input id is made of it (`firingInputId`) and is an input id (at most 200 characters). */
export const SCHEDULE_ID_MAX = 160;
/** A firing later than this after its time (ms) is marked `late`: no worker owned the conversation's partition at its time. */
export const LATE_AFTER_MS = 2000;
/** The longest `maxLateness` (ms): a week. */
export const MAX_LATENESS_MAX = 7 * 24 * 60 * 60 * 1000;

/** A schedule's id: the id of the input that made it, short enough to name its firings' inputs. */
export const ScheduleId = InputId.max(SCHEDULE_ID_MAX, `a schedule id has 1 to ${SCHEDULE_ID_MAX} characters`);

/** An IANA time zone this runtime knows (`Europe/Paris`, `UTC`). */
export const TimeZone = z
  .string()
  .min(1)
  .max(100)
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'tz must be an IANA time zone, such as Europe/Paris or UTC');

/** What a firing does to a busy conversation (a turn running): queue a follow-up, steer the running turn, or nothing. */
export const ScheduleOnBusy = z.enum(['enqueue', 'steer', 'skip']);
export type ScheduleOnBusy = z.infer<typeof ScheduleOnBusy>;

/**
 * What a schedule is, as its maker set it: when (`at`, once; or `every`, a cron expression read
 * in `tz`, UTC when null), what it sends (`messages`, as a chat or a steer of its maker), what it
 * does to a busy conversation (`onBusy`), whether it is skipped when a person's chat or steer was
 * accepted since it was made or last due (`unlessUserSpokeSince`), and how late it may still fire
 * (`maxLateness`, ms; null: however late).
 */
export const ScheduleFields = z.object({
  at: z.iso.datetime().nullable(),
  every: z.string().min(1).max(200).nullable(),
  tz: TimeZone.nullable(),
  messages: z.array(UserText).min(1).max(8),
  onBusy: ScheduleOnBusy,
  unlessUserSpokeSince: z.boolean(),
  maxLateness: z.number().int().nonnegative().max(MAX_LATENESS_MAX).nullable(),
});
export type ScheduleFields = z.infer<typeof ScheduleFields>;

/** A schedule as the state and the reads hold it: its fields, its id and maker, when it fires next and when it last fired. */
export const ScheduleView = ScheduleFields.extend({
  id: ScheduleId,
  maker: Subject,
  next: z.iso.datetime(),
  lastFiredAt: z.iso.datetime().nullable(),
});
export type ScheduleView = z.infer<typeof ScheduleView>;

/**
 * Makes, changes or cancels a schedule of the conversation (`op`). `schedule` is the schedule's
 * id: the making input's own id; a change or a cancel has an id of its own and names the
 * schedule. A make carries every field; a change the fields it changes (`at` and `every` replace
 * each other: a change naming one clears the other).
 */
export const ScheduleInputV1 = z.object({
  ...envelope,
  type: z.literal('schedule'),
  op: z.enum(['make', 'change', 'cancel']),
  schedule: ScheduleId,
  fields: ScheduleFields.partial().optional(),
});
export type ScheduleInput = z.infer<typeof ScheduleInputV1>;

const bodyFields = {
  at: z.iso.datetime({ offset: true, message: 'at must be an ISO 8601 date and time, with its offset (2026-03-29T09:00:00+02:00) or Z' }).optional(),
  every: z.string().trim().min(1).max(200).optional(),
  tz: TimeZone.optional(),
  text: BodyText.optional(),
  messages: z.array(BodyText).min(1, 'messages must hold at least one message').max(8).optional(),
  onBusy: ScheduleOnBusy.optional(),
  unlessUserSpokeSince: z.boolean().optional(),
  maxLateness: z.number().int('maxLateness is a whole number of milliseconds').nonnegative().max(MAX_LATENESS_MAX, `maxLateness is at most ${MAX_LATENESS_MAX} ms (a week)`).nullable().optional(),
};

/** `POST /v1/conversations/{key}/schedules`: `at` or `every` (cron, read in `tz`), `text` or `messages`; `onBusy` defaults to `enqueue`. */
export const ScheduleBody = z
  .object({ id: ScheduleId.optional(), ...bodyFields })
  .strict()
  .refine((b) => (b.at === undefined) !== (b.every === undefined), { message: 'give either at or every, not both and not neither' })
  .refine((b) => (b.text === undefined) !== (b.messages === undefined), { message: 'give either text or messages, not both and not neither' });
export type ScheduleBody = z.infer<typeof ScheduleBody>;

/** `PATCH /v1/conversations/{key}/schedules/{id}`: the fields it changes (`at` and `every` replace each other). */
export const ScheduleChangeBody = z
  .object({ id: InputId.optional(), ...bodyFields })
  .strict()
  .refine((b) => b.at === undefined || b.every === undefined, { message: 'give at or every, not both' })
  .refine((b) => b.text === undefined || b.messages === undefined, { message: 'give text or messages, not both' });
export type ScheduleChangeBody = z.infer<typeof ScheduleChangeBody>;

/** The name of the built-in tool an agent's model makes schedules of its own conversation with (an agent's `schedules: true`). */
export const SCHEDULE_TOOL = 'schedule';

/**
 * The arguments of the built-in `schedule` tool: `op` `make` (the fields of a POST, `text` for
 * what it sends), `change` (the schedule `id` and the fields it changes, as a PATCH), `cancel`
 * (`id`) or `list`. Which fields an op takes is checked where the call is decided
 * (`scheduleCallOf`, @rudder/conversation), so the model reads why in the result.
 */
export const ScheduleToolArguments = z
  .object({
    op: z.enum(['make', 'change', 'cancel', 'list']).describe('make a schedule, change or cancel one by its id, or list them'),
    id: ScheduleId.optional().describe('change and cancel: the schedule, as make or list answered it'),
    at: bodyFields.at.describe('make or change: the time it fires once, ISO 8601 with its offset (2026-03-29T09:00:00+02:00) or Z'),
    every: bodyFields.every.describe('make or change, instead of at: a cron expression of 5 or 6 fields, read in tz'),
    tz: bodyFields.tz.describe('the IANA time zone every is read in (UTC when absent)'),
    text: BodyText.optional().describe('make (needed) or change: the message sent to this conversation at its time, as from the person you answer'),
    onBusy: bodyFields.onBusy.describe('what it does while a turn runs: enqueue (default: a follow-up after it), steer (a message to it), skip (nothing)'),
    unlessUserSpokeSince: bodyFields.unlessUserSpokeSince.describe('skip it when the person wrote since it was made or last due'),
  })
  .strict();
export type ScheduleToolArguments = z.infer<typeof ScheduleToolArguments>;

/** A schedule as the API answers it: its view, with its messages as one `text`. */
export const ScheduleItem = ScheduleView.extend({ text: z.string() }).meta({
  id: 'Schedule',
  description:
    '`at` (once) or `every` (cron, read in `tz`; UTC when null); `next`: when it fires next; `lastFiredAt`: when it last fired (null: never); `maker`: the subject it fires as.',
});
export type ScheduleItem = z.infer<typeof ScheduleItem>;

export const SchedulesAnswer = z
  .object({
    items: z.array(ScheduleItem),
    position: z.number().int().nonnegative().describe('The log position the list is read as of.'),
  })
  .meta({ id: 'Schedules', description: "The conversation's schedules, in the order they were made." });
export type SchedulesAnswer = z.infer<typeof SchedulesAnswer>;

/** Why a make, change or cancel changed nothing. */
export const ScheduleRefusalCode = z.enum(['forbidden', 'not_found', 'exists', 'full', 'invalid']);


export const SCHEDULE = inputKind({
  record: ScheduleInputV1,
  events: {
    /** A schedule was made by the input `input` (its id is the schedule's). */
    'schedule.made': eventContract(z.object({ input: InputId, schedule: ScheduleView }), (data) => namesAnswers(data.input)),
    /** A schedule was changed by the input `input`: `schedule` is it as it is now. */
    'schedule.changed': eventContract(z.object({ input: InputId, schedule: ScheduleView }), (data) => namesAnswers(data.input)),
    /** A schedule was cancelled by the input `input`: it fires no more. */
    'schedule.cancelled': eventContract(z.object({ input: InputId, schedule: ScheduleId }), (data) => namesAnswers(data.input)),
    /**
     * A make, change or cancel changed nothing: its subject may not write (`forbidden`); nobody
     * opened the conversation, or no such schedule (`not_found`); a schedule has that id
     * (`exists`); the conversation has SCHEDULES_MAX (`full`); the fields do not make a schedule (`invalid`).
     */
    'schedule.refused': eventContract(
      z.object({ input: InputId, schedule: ScheduleId, op: z.enum(['make', 'change', 'cancel']), code: ScheduleRefusalCode, message: z.string() }),
      (data) => namesAnswers(data.input),
    ),
    /**
     * The schedule's time `at` came: the worker owning the conversation made its input `input`
     * (a chat or a steer of the schedule's maker, stored just before), accepted or refused
     * (`accepted`); `late` when it fired more than LATE_AFTER_MS after its time; `next` its
     * next time (null: it ended).
     */
    'schedule.fired': eventContract(
      z.object({ schedule: ScheduleId, at: z.iso.datetime(), late: z.boolean(), input: InputId, accepted: z.boolean(), next: z.iso.datetime().nullable() }),
      (data) => namesAbout(data.input),
    ),
    /**
     * The schedule's time `at` came and it made no input: past its `maxLateness` (`late`), a turn
     * ran and its `onBusy` is `skip` (`busy`), or a person spoke since it was made or last due
     * (`spoke`). `next`: its next time (null: it ended).
     */
    'schedule.skipped': eventContract(
      z.object({ schedule: ScheduleId, at: z.iso.datetime(), reason: z.enum(['late', 'busy', 'spoke']), next: z.iso.datetime().nullable() }),
      () => NAMES_NONE,
    ),
  },
});
