import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ScheduleToolArguments, type DomainEvent, type ScheduleView, type ToolCall } from '@rudder/contracts';
import type { TurnState } from '@rudder/agent/turn';
import type { Agents } from './decide';
import { scheduleFieldsOf, scheduleRules, type InputOf } from './inputs';
import type { ConversationState } from './state';

/**
 * The id of the input a call of the built-in `schedule` tool stands for (a make's is the new
 * schedule's): its turn's id and a digest of its call id, so every rerun of the call (its id is
 * the same on each) makes the same input, and it is an input id whatever the model's call id holds.
 */
export const scheduleCallInputId = (turn: string, callId: string): string => `${turn}:call:${createHash('sha256').update(callId).digest('hex').slice(0, 16)}`;

/** A call of the `schedule` tool as checked: the schedule input it stands for, the list it asks for, or why it is neither. */
export type ScheduleCall = { input: InputOf<'schedule'> } | { list: true } | { error: string };

/**
 * What a call's arguments ask, checked at `now` as a POST's or PATCH's body is (`scheduleFieldsOf`):
 * `make` needs `text` and one of `at` and `every`; `change` an `id` and a field; `cancel` an
 * `id` only; `list` nothing. The input is the turn's prompt's subject's: the schedule fires as it.
 */
export function scheduleCallOf(turn: TurnState, call: ToolCall, conversation: string, now: Date): ScheduleCall {
  let json: unknown;
  try {
    json = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return { error: `the arguments are not JSON: ${call.arguments.slice(0, 200)}` };
  }
  const parsed = ScheduleToolArguments.safeParse(json);
  if (!parsed.success) return { error: `invalid arguments: ${z.prettifyError(parsed.error)}` };
  const { op, id, ...given } = parsed.data;
  const changes = Object.keys(given).length > 0;
  if (op === 'list') return id === undefined && !changes ? { list: true } : { error: 'list takes no other argument' };
  if (op === 'make') {
    if (id !== undefined) return { error: 'make takes no id: the schedule gets one, and the result says it' };
    if ((given.at === undefined) === (given.every === undefined)) return { error: 'make needs either at or every, not both and not neither' };
    if (given.text === undefined) return { error: 'make needs text: the message sent at its time' };
  } else if (id === undefined) return { error: `${op} needs the schedule's id` };
  if (op === 'cancel' && changes) return { error: 'cancel takes only the schedule\'s id' };
  if (op === 'change' && !changes) return { error: 'change needs a field to change' };
  if (op === 'change' && given.at !== undefined && given.every !== undefined) return { error: 'change takes at or every, not both' };
  const checked = scheduleFieldsOf(given, now);
  if (!('fields' in checked)) return { error: `${checked.path}: ${checked.message}` };
  const inputId = scheduleCallInputId(turn.id, call.id);
  const envelope = { v: 1 as const, id: inputId, conversation, subject: turn.prompt.subject, sentAt: now.toISOString() };
  const fields = op === 'cancel' ? {} : { fields: checked.fields };
  return { input: { ...envelope, type: 'schedule', op, schedule: id ?? inputId, ...fields } };
}

/**
 * Decides, under the conversation's lock, a call of the built-in `schedule` tool of the running
 * turn at `step`: its result (`tool.ended`) and, when it changed a schedule, the schedule's event
 * after it, in one commit — decided by the `schedule` input kind's rules (`scheduleRules`), so the
 * same bound (SCHEDULES_MAX) and refusals hold. A refusal, or arguments that make no schedule,
 * change nothing and are an error result the model reads. Only the conversation's own schedules
 * are made, changed, cancelled and listed. Decided again after a crash before its commit, it
 * makes the same input (`scheduleCallInputId`), so one schedule.
 */
export function decideScheduleCall(
  state: ConversationState,
  turn: TurnState,
  at: { step: number; call: ToolCall; conversation: string; now: Date; agents: Agents },
): DomainEvent[] {
  const { step, call, conversation, now, agents } = at;
  const ended = (result: string, isError: boolean): DomainEvent => ({ type: 'tool.ended', data: { turn: turn.id, step, callId: call.id, name: call.name, result, isError } });
  // A turn being rolled back changes no schedule: the rollback cancels the ones it made already. (The call's turn is the
  // running one: a call is decided in its own turn's commit, by the worker that runs it.)
  if (state.ending === 'rollback') return [ended('not done: this turn is being rolled back (nothing changed)', true)];
  const asked = scheduleCallOf(turn, call, conversation, now);
  if ('error' in asked) return [ended(`error: ${asked.error} (nothing changed)`, true)];
  if ('list' in asked) {
    const list = state.schedules.map(describe).join('\n');
    return [ended(list === '' ? 'This conversation has no schedules.' : `This conversation's schedules:\n${list}`, false)];
  }
  const decided = scheduleRules.decide(state, asked.input, { agents, guarded: undefined, now });
  const [event] = decided;
  switch (event?.type) {
    case 'schedule.made':
      return [ended(`Made: ${describe(event.data.schedule)}`, false), event];
    case 'schedule.changed':
      return [ended(`Changed: ${describe(event.data.schedule)}`, false), event];
    case 'schedule.cancelled':
      return [ended(`Cancelled schedule ${event.data.schedule}: it fires no more.`, false), event];
    case 'schedule.refused':
      return [ended(`error: ${event.data.message} (nothing changed)`, true)];
    default:
      throw new Error(`the schedule rules decided ${JSON.stringify(decided)} for a call of the schedule tool`);
  }
}

/** A schedule as the model reads it: its id, when it fires next, how, and what it sends. */
const describe = (s: ScheduleView): string =>
  `schedule ${s.id}, next at ${s.next} (${s.every === null ? 'once' : `every ${s.every} in ${s.tz ?? 'UTC'}`}; onBusy ${s.onBusy}${s.unlessUserSpokeSince ? ', unless the user spoke since' : ''}): ${JSON.stringify(s.messages.join('\n'))}`;
