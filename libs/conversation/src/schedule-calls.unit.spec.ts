import { describe, expect, it } from 'vitest';
import { InputRecord, SCHEDULES_MAX, type DomainEvent, type ToolCall } from '@rudder/contracts';
import { startTurn } from '@rudder/agent/turn';
import { evolve } from './event-rules';
import { decideScheduleCall, scheduleCallInputId } from './schedule-calls';
import { agentsWith, base, IDLE, policy, RUNNING } from './testing/decider-spec';
import { decideInputs } from './decide';
import { initialState, type ConversationState } from './state';

const NOW = new Date('2026-12-01T08:00:00.000Z');
const AT = '2026-12-01T09:00:00.000Z';
const agents = agentsWith(policy);
const turnOf = (subject = 'alice') => startTurn('t1', { id: 'p0', text: 'p0', messages: ['p0'], subject });
const call = (args: unknown, id = 'call_1'): ToolCall => ({ id, name: 'schedule', arguments: typeof args === 'string' ? args : JSON.stringify(args) });
const stateOf = (events: readonly DomainEvent[]): ConversationState => events.reduce(evolve, initialState());
const decide = (state: ConversationState, args: unknown, { subject = 'alice', id = 'call_1' } = {}) =>
  decideScheduleCall(state, turnOf(subject), { step: 1, call: call(args, id), conversation: 'c', now: NOW, agents });
const result = (events: DomainEvent[]) => {
  const ended = events[0];
  if (ended?.type !== 'tool.ended') throw new Error(`no tool.ended first: ${JSON.stringify(events)}`);
  return ended.data;
};
/** Made by the conversation's own input (a POST), as the gateway sends one. */
const made = (state: ConversationState, id: string): ConversationState =>
  decideInputs(state, [{ ...base, type: 'schedule', id, op: 'make', schedule: id, fields: { at: AT, messages: ['ping'] } } as InputRecord], new Set(), agents, NOW).reduce(evolve, state);

describe('the schedule tool: a call decided under the lock by the schedule input kind`s rules', () => {
  it('a make stores its result and schedule.made together: the id is derived from the turn and call, the maker is the prompt`s subject, the result says id and next time', () => {
    const events = decide(stateOf(RUNNING), { op: 'make', at: '2026-12-01T10:00:00+01:00', text: 'check the build' });
    const id = scheduleCallInputId('t1', 'call_1');
    expect(events.map((e) => e.type)).toEqual(['tool.ended', 'schedule.made']);
    expect(events[1]).toMatchObject({ data: { input: id, schedule: { id, maker: 'alice', at: AT, next: AT, messages: ['check the build'], onBusy: 'enqueue', every: null } } });
    expect(result(events)).toMatchObject({ turn: 't1', step: 1, callId: 'call_1', name: 'schedule', isError: false });
    expect(result(events).result).toContain(`schedule ${id}, next at ${AT}`);
    // Decided again (a rerun of the call after a crash before its commit): the same input, so the same schedule.
    expect(decide(stateOf(RUNNING), { op: 'make', at: AT, text: 'check the build' })[1]).toMatchObject({ data: { input: id } });
    // Decided again once stored: it is there already, nothing more is made.
    const again = decide(stateOf([...RUNNING, ...events]), { op: 'make', at: AT, text: 'check the build' });
    expect(again).toHaveLength(1);
    expect(result(again)).toMatchObject({ isError: true, result: expect.stringContaining('has a schedule') });
  });

  it('another call makes another schedule; an id holds only input-id characters whatever the call id', () => {
    const a = scheduleCallInputId('t1', 'call_1');
    const b = scheduleCallInputId('t1', 'call 2 ✓');
    const c = scheduleCallInputId('t2', 'call_1');
    expect(new Set([a, b, c]).size).toBe(3);
    for (const id of [a, b, c]) expect(id).toMatch(/^[A-Za-z0-9._:/-]{1,160}$/);
    // No record on agent.inputs may take one: its once key would be the call's before the call is made.
    expect(InputRecord.safeParse({ ...base, type: 'chat', id: a, messages: ['x'], onBusy: 'enqueue' }).success).toBe(false);
    expect(InputRecord.safeParse({ ...base, type: 'chat', id: 't1:call:soon', messages: ['x'], onBusy: 'enqueue' }).success).toBe(true);
  });

  it('the bound: past SCHEDULES_MAX a make is an error result and changes nothing', () => {
    let state = stateOf(RUNNING);
    for (let i = 0; i < SCHEDULES_MAX; i++) state = made(state, `s${i}`);
    const events = decide(state, { op: 'make', at: AT, text: 'one more' });
    expect(events.map((e) => e.type)).toEqual(['tool.ended']);
    expect(result(events)).toMatchObject({ isError: true, result: expect.stringMatching(/has 20 schedules, the most it may have.*nothing changed/) });
  });

  it('a subject who may not write (the prompt`s, say a grant was revoked) makes nothing', () => {
    const events = decide(stateOf(IDLE), { op: 'make', at: AT, text: 'x' }, { subject: 'mallory' });
    expect(events.map((e) => e.type)).toEqual(['tool.ended']);
    expect(result(events).isError).toBe(true);
  });

  it('list, change and cancel act on the conversation`s own schedules; an unknown id is an error result', () => {
    const state = made(stateOf(RUNNING), 's1');
    expect(result(decide(stateOf(RUNNING), { op: 'list' })).result).toBe('This conversation has no schedules.');
    expect(result(decide(state, { op: 'list' })).result).toBe(`This conversation's schedules:\nschedule s1, next at ${AT} (once; onBusy enqueue): "ping"`);
    const changed = decide(state, { op: 'change', id: 's1', every: '0 9 * * 1', tz: 'Europe/Paris' });
    expect(changed[1]).toMatchObject({ type: 'schedule.changed', data: { schedule: { id: 's1', at: null, every: '0 9 * * 1', tz: 'Europe/Paris', next: '2026-12-07T08:00:00.000Z' } } });
    expect(decide(state, { op: 'cancel', id: 's1' })).toEqual([
      { type: 'tool.ended', data: { turn: 't1', step: 1, callId: 'call_1', name: 'schedule', result: 'Cancelled schedule s1: it fires no more.', isError: false } },
      { type: 'schedule.cancelled', data: { input: scheduleCallInputId('t1', 'call_1'), schedule: 's1' } },
    ]);
    const unknown = decide(state, { op: 'cancel', id: 'nope' });
    expect(unknown.map((e) => e.type)).toEqual(['tool.ended']);
    expect(result(unknown)).toMatchObject({ isError: true, result: 'error: the conversation has no schedule nope (nothing changed)' });
  });

  it('each result says what was done, in the model’s words: made, changed, the list of several, each as it fires', () => {
    const state = made(made(stateOf(RUNNING), 's1'), 's2');
    const id = scheduleCallInputId('t1', 'call_1');
    const make = decide(state, { op: 'make', every: '0 9 * * 1', text: 'one\ntwo' });
    expect(result(make)).toMatchObject({ isError: false, result: `Made: schedule ${id}, next at 2026-12-07T09:00:00.000Z (every 0 9 * * 1 in UTC; onBusy enqueue): "one\\ntwo"` });
    const changed = decide(state, { op: 'change', id: 's1', at: '2026-12-02T09:00:00.000Z', unlessUserSpokeSince: true });
    expect(changed[1]).toMatchObject({ type: 'schedule.changed' });
    expect(result(changed)).toEqual({
      turn: 't1',
      step: 1,
      callId: 'call_1',
      name: 'schedule',
      result: 'Changed: schedule s1, next at 2026-12-02T09:00:00.000Z (once; onBusy enqueue, unless the user spoke since): "ping"',
      isError: false,
    });
    expect(result(decide(state, { op: 'list' }))).toMatchObject({
      isError: false,
      result: `This conversation's schedules:\nschedule s1, next at ${AT} (once; onBusy enqueue): "ping"\nschedule s2, next at ${AT} (once; onBusy enqueue): "ping"`,
    });
    const paris = decide(state, { op: 'change', id: 's2', every: '0 9 * * 1', tz: 'Europe/Paris' });
    expect(result(paris).result).toBe('Changed: schedule s2, next at 2026-12-07T08:00:00.000Z (every 0 9 * * 1 in Europe/Paris; onBusy enqueue): "ping"');
    // A schedule of several messages (made by a POST) shows them as one text, a line each.
    const several = decideInputs(stateOf(RUNNING), [{ ...base, type: 'schedule', id: 's3', op: 'make', schedule: 's3', fields: { at: AT, messages: ['a', 'b'] } } as InputRecord], new Set(), agents, NOW);
    expect(result(decide(several.reduce(evolve, stateOf(RUNNING)), { op: 'list' })).result).toBe(`This conversation's schedules:\nschedule s3, next at ${AT} (once; onBusy enqueue): "a\\nb"`);
  });

  it('blank arguments are an empty object (no op: invalid), not arguments that are not JSON; those are quoted up to 200 characters', () => {
    const state = stateOf(RUNNING);
    for (const blank of ['', '  \n']) expect(result(decide(state, blank)).result).toMatch(/^error: invalid arguments/);
    const long = `{"op": "make", "text": "${'y'.repeat(300)}`;
    expect(result(decide(state, long)).result).toBe(`error: the arguments are not JSON: ${long.slice(0, 200)} (nothing changed)`);
  });

  it('a change of one of at and every takes it (the other is cleared)', () => {
    const state = made(stateOf(RUNNING), 's1');
    expect(decide(state, { op: 'change', id: 's1', every: '0 9 * * *' })[1]).toMatchObject({ type: 'schedule.changed', data: { schedule: { at: null, every: '0 9 * * *' } } });
    expect(decide(state, { op: 'change', id: 's1', at: '2026-12-02T09:00:00.000Z' })[1]).toMatchObject({ type: 'schedule.changed', data: { schedule: { at: '2026-12-02T09:00:00.000Z' } } });
  });

  it('arguments that make no schedule are an error result the model reads, and nothing changes', () => {
    const state = made(stateOf(RUNNING), 's1');
    const cases: [unknown, RegExp][] = [
      ['{not json', /the arguments are not JSON/],
      [{ op: 'delete', id: 's1' }, /invalid arguments/],
      [{ op: 'make', at: AT, text: 'x', maxLateness: 5 }, /invalid arguments/],
      [{ op: 'make', text: 'x' }, /make needs either at or every/],
      [{ op: 'make', at: AT, every: '* * * * *', text: 'x' }, /make needs either at or every/],
      [{ op: 'make', at: AT }, /make needs text/],
      [{ op: 'make', id: 'mine', at: AT, text: 'x' }, /make takes no id/],
      [{ op: 'make', at: '2026-12-01T07:58:59Z', text: 'x' }, /^error: at: 2026-12-01T07:58:59Z passed more than 60 s ago/],
      [{ op: 'make', every: 'every hour', text: 'x' }, /^error: every: the cron expression every hour is refused/],
      [{ op: 'make', at: AT, text: 'x'.repeat(4001) }, /^error: text: a schedule's text is at most 4000 characters/],
      [{ op: 'cancel' }, /cancel needs the schedule's id/],
      [{ op: 'cancel', id: 's1', text: 'x' }, /cancel takes only the schedule's id/],
      [{ op: 'change', id: 's1' }, /change needs a field to change/],
      [{ op: 'change', id: 's1', at: AT, every: '* * * * *' }, /change takes at or every, not both/],
      [{ op: 'list', id: 's1' }, /list takes no other argument/],
    ];
    for (const [args, reason] of cases) {
      const events = decide(state, args);
      expect(events.map((e) => e.type), JSON.stringify(args)).toEqual(['tool.ended']);
      expect(result(events), JSON.stringify(args)).toMatchObject({ isError: true, result: expect.stringMatching(reason) });
      expect(result(events).result).toMatch(/\(nothing changed\)$/);
    }
  });

  it("a rollback of the turn cancels the schedules its tool made, once each; the conversation's own stay; a turn being rolled back makes none", () => {
    const byTool = decide(stateOf(RUNNING), { op: 'make', at: AT, text: 'check the build' });
    const id = scheduleCallInputId('t1', 'call_1');
    const ended: DomainEvent = { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'ok', steered: [] } };
    const after = made(stateOf([...RUNNING, ...byTool, ended]), 's-api');
    expect(after.schedules.map((s) => s.id)).toEqual([id, 's-api']);
    const rollback = { ...base, type: 'rollback', id: 'r1', asked: { turns: 1 } } as InputRecord;
    const decided = decideInputs(after, [rollback], new Set(), agents, NOW);
    expect(decided.filter((e) => e.type === 'schedule.cancelled')).toEqual([{ type: 'schedule.cancelled', data: { input: `${id}:rolled-back`, schedule: id } }]);
    expect(decided.reduce(evolve, after).schedules.map((s) => s.id)).toEqual(['s-api']);
    // Rolled back with stopRunning, the running turn's later call makes nothing: the rollback took its turn back.
    const running = stateOf([...RUNNING, ...byTool]);
    const stopping = decideInputs(running, [{ ...rollback, id: 'r2', stopRunning: true } as InputRecord], new Set(), agents, NOW);
    expect(stopping.filter((e) => e.type === 'schedule.cancelled').map((e) => e.data)).toEqual([{ input: `${id}:rolled-back`, schedule: id }]);
    const later = decide(stopping.reduce(evolve, running), { op: 'make', at: AT, text: 'one more' }, { id: 'call_2' });
    expect(later).toHaveLength(1);
    expect(result(later)).toMatchObject({ isError: true, result: expect.stringContaining('rolled back') });
    // Two turns rolled back, the first of them made it: cancelled too.
    const second: DomainEvent[] = [
      { type: 'turn.started', data: { turn: 't2', prompt: { id: 'p2', text: 'p2' } } },
      { type: 'turn.ended', data: { turn: 't2', status: 'completed', outcome: null, content: 'ok', steered: [] } },
    ];
    const two = decideInputs(second.reduce(evolve, after), [{ ...rollback, id: 'r3', asked: { turns: 2 } } as InputRecord], new Set(), agents, NOW);
    expect(two.filter((e) => e.type === 'schedule.cancelled').map((e) => e.data)).toEqual([{ input: `${id}:rolled-back`, schedule: id }]);
  });
});
