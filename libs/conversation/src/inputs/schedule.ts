import { Cron } from 'croner';
import { inputText, SCHEDULE_TEXT_MAX, SCHEDULES_MAX, type DomainEvent, type ScheduleChangeBody, type EventDataOf, type ScheduleFields, type ScheduleItem, type ScheduleView } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import type { ConversationState } from '../state';
import { REUSED, type InputOf, type InputRules } from './rules';
import { characters, writeRefusal } from './shared';

/**
 * A schedule as the conversation's state holds it: its view (what the reads show), and how many
 * of a person's chats and steers had been accepted when it was made or last due (`spoken`
 * then): `unlessUserSpokeSince` compares it with the state's count now.
 */
export type Schedule = ScheduleView & { spokenAt: number };

/** A make, change or cancel as decided: the schedule as it is now (null once cancelled). */
export type ScheduleAnswer = { schedule: ScheduleView | null };

/** Why a make, change or cancel changed nothing: its code and what it says. */
export type ScheduleRefusal = Pick<EventDataOf<'schedule.refused'>, 'code' | 'message'>;

/**
 * When a cron expression next fires strictly after `after`, read in the time zone `tz` (UTC when
 * null), through croner: across a daylight-saving change a wall-clock time that does not exist
 * fires at the first moment after it, and one that happens twice fires once. Null when it never
 * fires again. Pure: the same expression, zone and moment give the same answer. Throws on an
 * expression croner refuses (`cronError` says why).
 */
export function nextFiring(every: string, tz: string | null, after: Date): string | null {
  const next = new Cron(every, { timezone: tz ?? 'UTC' }).nextRun(after);
  return next === null ? null : next.toISOString();
}

/** Why a cron expression is refused (croner's words), or null when it is one that fires. */
export function cronError(every: string, tz: string | null, now: Date): string | null {
  try {
    return nextFiring(every, tz, now) === null ? `the cron expression ${every} never fires after ${now.toISOString()}` : null;
  } catch (error) {
    return `the cron expression ${every} is refused: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * How long ago an `at` may have passed and still be taken (it fires at once): a make retried a
 * moment after its time is the same make, not a mistake; one further in the past is refused (400 at the door, an error result for the tool).
 */
export const AT_PASSED_MS = 60_000;

/** The fields a body (a POST's, a PATCH's) or a call of the `schedule` tool gives. */
export type ScheduleFieldsGiven = Partial<Pick<ScheduleChangeBody, 'at' | 'every' | 'tz' | 'text' | 'messages' | 'onBusy' | 'unlessUserSpokeSince' | 'maxLateness'>>;

/** Why the fields given make no schedule: the field (`path`), what is wrong with it (`message`), and in a word (`detail`). */
export type FieldRefusal = { path: string; message: string; detail: string };

/**
 * The record's fields from a body or a tool call, checked at `now`: `at` in UTC (not more than
 * AT_PASSED_MS in the past), `every` a cron expression croner takes in `tz`, `text` as one
 * message, at most SCHEDULE_TEXT_MAX characters. What the body leaves out stays out (a change
 * keeps the schedule's own; a make takes the defaults under the lock).
 */
export function scheduleFieldsOf(body: ScheduleFieldsGiven, now: Date): { fields: Partial<ScheduleFields> } | FieldRefusal {
  const fields: Partial<ScheduleFields> = {};
  if (body.at !== undefined) {
    const at = new Date(body.at);
    if (at.getTime() < now.getTime() - AT_PASSED_MS) {
      return { path: 'at', message: `${body.at} passed more than ${AT_PASSED_MS / 1000} s ago (it is ${now.toISOString()})`, detail: 'has passed' };
    }
    fields.at = at.toISOString();
  }
  if (body.tz !== undefined) fields.tz = body.tz;
  if (body.every !== undefined) {
    const error = cronError(body.every, body.tz ?? null, now);
    if (error !== null) return { path: 'every', message: error, detail: error };
    fields.every = body.every;
  }
  if (body.text !== undefined || body.messages !== undefined) fields.messages = body.messages ?? [body.text as string];
  const chars = [...inputText(fields.messages ?? [])].length;
  if (chars > SCHEDULE_TEXT_MAX) {
    return { path: 'text', message: `a schedule's text is at most ${SCHEDULE_TEXT_MAX} characters (${chars} given)`, detail: 'too long' };
  }
  if (body.onBusy !== undefined) fields.onBusy = body.onBusy;
  if (body.unlessUserSpokeSince !== undefined) fields.unlessUserSpokeSince = body.unlessUserSpokeSince;
  if (body.maxLateness !== undefined) fields.maxLateness = body.maxLateness;
  return { fields };
}

/** A schedule as the API answers it: its view, its messages as one text. */
export const scheduleItem = (schedule: Schedule | ScheduleView): ScheduleItem => {
  const { id, at, every, tz, messages, onBusy, unlessUserSpokeSince, maxLateness, maker, next, lastFiredAt } = schedule;
  return { id, at, every, tz, messages, text: inputText(messages), onBusy, unlessUserSpokeSince, maxLateness, maker, next, lastFiredAt };
};

/** How many of a person's chats and steers were accepted so far: every acceptance but the firings'. */
export const spoken = (state: ConversationState): number => state.accepted - state.firingsAccepted;

/**
 * Making, changing and cancelling a conversation's schedules: decided under its lock, by a
 * subject that may write to it (it fires as that subject: its maker, or whoever changed it last).
 * At most SCHEDULES_MAX live in the state; a schedule's messages are at most SCHEDULE_TEXT_MAX
 * characters together. A make computes its first time from `now` (a cron's first time after
 * it; an `at` is its own, even if already passed by the time it is decided: it then fires at once).
 */
export const scheduleRules: InputRules<'schedule', ScheduleAnswer, ScheduleRefusal> = {
  decide: (state, input, { now }) => {
    const refused = (code: ScheduleRefusal['code'], message: string): DomainEvent[] => [
      { type: 'schedule.refused', data: { input: input.id, schedule: input.schedule, op: input.op, code, message } },
    ];
    if (state.owner === null) return refused('not_found', 'nobody has written to this conversation yet: a schedule belongs to an opened conversation');
    const unwritable = writeRefusal(state, input.subject);
    if (unwritable !== null) return refused('forbidden', unwritable);
    const existing = state.schedules.find((s) => s.id === input.schedule);
    if (input.op === 'cancel') {
      if (!existing) return refused('not_found', `the conversation has no schedule ${input.schedule}`);
      return [{ type: 'schedule.cancelled', data: { input: input.id, schedule: input.schedule } }];
    }
    if (input.op === 'make' && existing) return refused('exists', `the conversation has a schedule ${input.schedule} already`);
    if (input.op === 'change' && !existing) return refused('not_found', `the conversation has no schedule ${input.schedule}`);
    if (input.op === 'make' && state.schedules.length >= SCHEDULES_MAX) {
      return refused('full', `the conversation has ${state.schedules.length} schedules, the most it may have; cancel one first`);
    }
    const made = viewOf(existing, input, now);
    if (typeof made === 'string') return refused('invalid', made);
    return [{ type: input.op === 'make' ? 'schedule.made' : 'schedule.changed', data: { input: input.id, schedule: made } }];
  },
  receiptKeys: (input) => [receiptKey.control('schedule', input.id)],
  receipt: {
    'schedule.made': { settles: true, read: (data, input) => (input.op === 'make' && data.schedule.id === input.schedule ? { answer: { schedule: data.schedule } } : REUSED) },
    'schedule.changed': { settles: true, read: (data, input) => (input.op === 'change' && data.schedule.id === input.schedule ? { answer: { schedule: data.schedule } } : REUSED) },
    'schedule.cancelled': { settles: true, read: (data, input) => (input.op === 'cancel' && data.schedule === input.schedule ? { answer: { schedule: null } } : REUSED) },
    'schedule.refused': {
      settles: true,
      read: (data, input) => (data.op === input.op && data.schedule === input.schedule ? { refusal: { code: data.code, message: data.message } } : REUSED),
    },
  },
  events: {
    'schedule.made': {
      evolve: (state, { schedule }) => ({ ...state, schedules: [...state.schedules, { ...schedule, spokenAt: spoken(state) }] }),
      onceKey: (data) => receiptKey.control('schedule', data.input),
    },
    'schedule.changed': {
      // A change starts its `unlessUserSpokeSince` anew, as a make does.
      evolve: (state, { schedule }) => ({ ...state, schedules: state.schedules.map((s) => (s.id === schedule.id ? { ...schedule, spokenAt: spoken(state) } : s)) }),
      onceKey: (data) => receiptKey.control('schedule', data.input),
    },
    'schedule.cancelled': {
      evolve: (state, { schedule }) => ({ ...state, schedules: state.schedules.filter((s) => s.id !== schedule) }),
      onceKey: (data) => receiptKey.control('schedule', data.input),
    },
    'schedule.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('schedule', data.input) },
    'schedule.fired': {
      // Stored after its input's events: `spoken` already leaves out this firing's acceptance.
      evolve: (state, data) => {
        const firingsAccepted = state.firingsAccepted + (data.accepted ? 1 : 0);
        const after = { ...state, firingsAccepted };
        return { ...after, schedules: advanced(after, data.schedule, data.next, data.at) };
      },
      // A schedule's time fires once, whatever decides it again: the state's advance and this key.
      onceKey: (data) => `schedule-due:${data.schedule}:${data.at}`,
    },
    'schedule.skipped': {
      evolve: (state, data) => ({ ...state, schedules: advanced(state, data.schedule, data.next, null) }),
      onceKey: (data) => `schedule-due:${data.schedule}:${data.at}`,
    },
  },
};

/**
 * The schedules with `id` moved to `next` (gone when null: an `at` that fired, a cron that never
 * fires again), its `spokenAt` now, and `lastFiredAt` when it fired.
 */
function advanced(state: ConversationState, id: string, next: string | null, firedAt: string | null): Schedule[] {
  if (next === null) return state.schedules.filter((s) => s.id !== id);
  return state.schedules.map((s) => (s.id === id ? { ...s, next, spokenAt: spoken(state), lastFiredAt: firedAt ?? s.lastFiredAt } : s));
}

/**
 * The schedule a make or change leaves (the fields it gives over the schedule's own), with its
 * next time from `now`; or why the fields make no schedule. The maker is the input's subject: a
 * change makes the subject who changed it the one it fires as.
 */
function viewOf(existing: Schedule | undefined, input: InputOf<'schedule'>, now: Date): ScheduleView | string {
  const given = input.fields ?? {};
  // `at` and `every` replace each other: a change naming one clears the other.
  const when = given.at != null ? { at: given.at, every: null } : given.every != null ? { at: null, every: given.every } : { at: existing?.at ?? null, every: existing?.every ?? null };
  const fields: ScheduleFields = {
    ...when,
    tz: given.tz !== undefined ? given.tz : (existing?.tz ?? null),
    messages: given.messages ?? existing?.messages ?? [],
    onBusy: given.onBusy ?? existing?.onBusy ?? 'enqueue',
    unlessUserSpokeSince: given.unlessUserSpokeSince ?? existing?.unlessUserSpokeSince ?? false,
    maxLateness: given.maxLateness !== undefined ? given.maxLateness : (existing?.maxLateness ?? null),
  };
  if (fields.messages.length === 0) return 'a schedule needs text or messages';
  const chars = characters(inputText(fields.messages));
  if (chars > SCHEDULE_TEXT_MAX) return `a schedule's text is at most ${SCHEDULE_TEXT_MAX} characters (${chars} given)`;
  let next: string | null;
  if (fields.every !== null) {
    const error = cronError(fields.every, fields.tz, now);
    if (error !== null) return error;
    next = nextFiring(fields.every, fields.tz, now);
  } else if (fields.at !== null) next = new Date(fields.at).toISOString();
  else return 'a schedule needs at or every';
  return { id: input.schedule, ...fields, maker: input.subject, next: next as string, lastFiredAt: existing?.lastFiredAt ?? null };
}
