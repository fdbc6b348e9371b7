import { ROLLBACK_TURNS_MAX, type DomainEvent, type EventDataOf, type RollbackAsked } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import type { ConversationState, EndedTurn } from '../state';
import { REUSED, type InputRules } from './rules';
import { writeRefusal } from './shared';

/** The turns rolled back, oldest first, and the running turn stopped first (null: none ran). */
export type RollbackAnswer = { turns: string[]; stopped: string | null };

/** Why a rollback changed nothing: its code and what it says, and what the refusal names (the last turn, the running one, how many could go). */
export type RollbackRefusal = Pick<EventDataOf<'rollback.refused'>, 'code' | 'message' | 'lastTurn' | 'running' | 'available'>;

/** The input id of a schedule's cancel by the rollback of the turn whose schedule tool made it: one per schedule. */
export const rolledBackScheduleInputId = (schedule: string): string => `${schedule}:rolled-back`;

/** The last turn that ended and was not rolled back; null: none. */
export const lastTurnOf = (state: ConversationState): string | null => state.endedTurns.at(-1)?.turn ?? null;

/**
 * A rollback takes back the last ended turns: `turns` of them, or every one after `toTurn`.
 * Nothing is deleted: `turns.rolledBack` says which, and every reader leaves them out of what
 * it shows by default — the worker's history (so every later model request, its budget and its
 * compaction), the transcript, the affordances — and their changes to the plan are undone at
 * once (`todos.updated` without a call: the items before the first change any of them made), and
 * so are their handoffs (`agent.changed` with the rollback's id: back to the agent that answered
 * before the first of them) and the schedules their schedule tool made (`schedule.cancelled`).
 * While a turn runs it is refused (`busy`) unless it asks to stop it first (`stopRunning`): the
 * turn is then stopped as a rollback (`stop.requested` mode `rollback`, its waiting calls
 * closed as a stop closes them, its own plan changes undone with its end) and is the last of the
 * turns rolled back, counted among `turns`. `ifLastTurn` refuses it when another turn ended (or
 * was rolled back) since. It reaches the last `ROLLBACK_TURNS_MAX` ended turns, which the
 * state keeps.
 */
export const rollbackRules: InputRules<'rollback', RollbackAnswer, RollbackRefusal> = {
  decide: (state, input) => {
    const { asked } = input;
    const refused = (code: RollbackRefusal['code'], message: string, named: Omit<RollbackRefusal, 'code' | 'message'> = {}): DomainEvent[] => [
      { type: 'rollback.refused', data: { rollback: input.id, asked, code, message, ...named } },
    ];
    const unwritable = writeRefusal(state, input.subject);
    if (unwritable !== null) return refused('forbidden', unwritable);
    const lastTurn = lastTurnOf(state);
    if (input.ifLastTurn !== undefined && input.ifLastTurn !== lastTurn) {
      return refused('precondition_failed', `the last turn that ended is ${lastTurn ?? 'none'}, not ${input.ifLastTurn}`, { lastTurn });
    }
    const running = state.runningTurn;
    if (running !== null && !input.stopRunning) {
      return refused('busy', `turn ${running} is running: stop it first, or ask to stop it (stopRunning: true)`, { running });
    }
    const ended = endedToRollBack(state.endedTurns, asked, running !== null);
    if ('refusal' in ended) return refused(ended.refusal, ended.message, ended.refusal === 'too_far' ? { available: ended.available } : {});
    const turns = [...ended.turns.map((t) => t.turn), ...(running === null ? [] : [running])];
    const events: DomainEvent[] = [];
    if (running !== null) events.push({ type: 'stop.requested', data: { stop: input.id, turn: running, mode: 'rollback' } });
    events.push({ type: 'turns.rolledBack', data: { rollback: input.id, asked, turns, stopped: running } });
    // The plan as it was before the first change of the ended turns rolled back (the running turn undoes its own with its end).
    const changed = ended.turns.find((t) => t.todosBefore !== undefined);
    if (changed?.todosBefore) {
      events.push({ type: 'todos.updated', data: { turn: changed.turn, step: 0, callId: null, items: changed.todosBefore, next: state.todos.next } });
    }
    // The schedules the turns rolled back made with the schedule tool (their ids are their calls': `<turn>:call:<digest>`) fire no more.
    for (const schedule of state.schedules.filter((s) => turns.some((turn) => s.id.startsWith(`${turn}:call:`)))) {
      events.push({ type: 'schedule.cancelled', data: { input: rolledBackScheduleInputId(schedule.id), schedule: schedule.id } });
    }
    // The agent that answered before the first handoff of the turns rolled back (the running one's last) answers again.
    const before = ended.turns.find((t) => t.agentBefore !== undefined)?.agentBefore ?? (running === null ? null : state.agentBeforeTurn);
    if (before !== null && state.agent !== null && before !== state.agent) {
      events.push({ type: 'agent.changed', data: { from: state.agent, to: before, turn: turns[0], step: 0, rollback: input.id } });
    }
    return events;
  },
  receiptKeys: (input) => [receiptKey.control('rollback', input.id)],
  receipt: {
    // The same rollback again (its id, and what it asked) is answered by its decision; another under its id is an id reused.
    'turns.rolledBack': {
      settles: true,
      read: ({ asked, turns, stopped }, input) => (sameAsked(asked, input.asked) ? { answer: { turns, stopped } } : REUSED),
    },
    'rollback.refused': {
      settles: true,
      read: ({ asked, code, message, lastTurn, running, available }, input) =>
        sameAsked(asked, input.asked)
          ? {
              refusal: {
                code,
                message,
                ...(lastTurn === undefined ? {} : { lastTurn }),
                ...(running === undefined ? {} : { running }),
                ...(available === undefined ? {} : { available }),
              },
            }
          : REUSED,
    },
  },
  events: {
    'turns.rolledBack': {
      evolve: (state, { turns }) => ({
        ...state,
        endedTurns: state.endedTurns.filter((t) => !turns.includes(t.turn)),
        // A summary that covered a turn rolled back is dropped (the worker's history drops it too).
        compaction: state.compaction !== null && turns.includes(state.compaction.through) ? null : state.compaction,
      }),
      onceKey: (data) => receiptKey.control('rollback', data.rollback),
    },
    'rollback.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('rollback', data.rollback) },
  },
};

/**
 * The ended turns a rollback takes back, oldest first: the last `turns` (one fewer when the
 * running turn, stopped first, is the last of them), or those after `toTurn`.
 */
function endedToRollBack(
  ended: EndedTurn[],
  asked: RollbackAsked,
  running: boolean,
): { turns: EndedTurn[] } | { refusal: 'not_found'; message: string } | { refusal: 'too_far'; message: string; available: number } {
  if ('toTurn' in asked) {
    const at = ended.findIndex((t) => t.turn === asked.toTurn);
    if (at < 0) {
      return { refusal: 'not_found', message: `turn ${asked.toTurn} is not one of the last ${ROLLBACK_TURNS_MAX} turns that ended and were not rolled back` };
    }
    return { turns: ended.slice(at + 1) };
  }
  const count = asked.turns - (running ? 1 : 0);
  const available = ended.length + (running ? 1 : 0);
  if (count > ended.length) return { refusal: 'too_far', message: `${asked.turns} turns asked, ${available} can be rolled back`, available };
  // Stryker disable next-line ConditionalExpression: `ended.slice(ended.length - 0)` is empty too
  return { turns: count === 0 ? [] : ended.slice(ended.length - count) };
}

const sameAsked = (a: RollbackAsked, b: RollbackAsked) => ('turns' in a && 'turns' in b ? a.turns === b.turns : 'toTurn' in a && 'toTurn' in b && a.toTurn === b.toTurn);
