import { describe, expect, it } from 'vitest';
import { firingInputId, InputRecord, LATE_AFTER_MS, SCHEDULE_TEXT_MAX, SCHEDULES_MAX, type DomainEvent, type ScheduleFields } from '@rudder/contracts';
import { isDue } from '../decide';
import { onceKey } from '../event-rules';
import { receiptKeys, receiptOf } from '../receipts';
import { agentsWith, base, chat, deciderSpec, IDLE, policy, RUNNING, sentAt, types, type Given } from '../testing/decider-spec';
import { scheduleCallInputId } from '../schedule-calls';
import { rolledBackScheduleInputId } from './rollback';
import { AT_PASSED_MS, cronError, nextFiring, scheduleFieldsOf, scheduleItem, type ScheduleFieldsGiven } from './schedule';

/** A make, change or cancel of schedule `schedule`, sent at `sentAt` (its decision's `now`). */
const schedule = (id: string, op: 'make' | 'change' | 'cancel', fields: Partial<ScheduleFields> = {}, extra: Partial<InputRecord> = {}): InputRecord => ({
  ...base,
  type: 'schedule',
  id,
  op,
  schedule: op === 'make' ? id : 's1',
  ...(op === 'cancel' ? {} : { fields: op === 'make' ? { ...DEFAULTS, ...fields } : fields }),
  ...extra,
} as InputRecord);
const DEFAULTS: ScheduleFields = { at: null, every: null, tz: null, messages: ['ping'], onBusy: 'enqueue', unlessUserSpokeSince: false, maxLateness: null };
const AT = '2026-12-01T09:00:00.000Z';
const ms = (iso: string, plus = 0) => new Date(Date.parse(iso) + plus);
const grant = (id: string, grantee: string, access: 'read' | 'write' | null): InputRecord => ({ ...base, type: 'grant', id, grantee, access });

describe('schedules under the conversation lock', () => {
  const { given } = deciderSpec();
  const withAt = (head: Given = given(IDLE), fields: Partial<ScheduleFields> = {}) => head.and(schedule('s1', 'make', { at: AT, ...fields }));

  it('fires once, never early: an `at` schedule is due at its time, its chat is the maker`s and its id the schedule`s and the time`s; then it ends', () => {
    const head = withAt();
    expect(head.state.schedules.map((s) => [s.id, s.next, s.maker])).toEqual([['s1', AT, 'alice']]);
    expect(head.state.dueAt).toBe(AT);
    head.whenDue(ms(AT, -1)).thenNothing();
    const fired = head.whenDue(ms(AT)).thenTypes('input.accepted', 'schedule.fired');
    const accepted = fired.events[0] as Extract<DomainEvent, { type: 'input.accepted' }>;
    expect(accepted.data.input).toMatchObject({ id: firingInputId('s1', AT), kind: 'chat', subject: 'alice', text: 'ping', sentAt: AT });
    expect(fired.events[1]).toEqual({ type: 'schedule.fired', data: { schedule: 's1', at: AT, late: false, input: firingInputId('s1', AT), accepted: true, next: null } });
    expect(fired.state.schedules).toEqual([]);
    expect(fired.state.queue.map((p) => p.id)).toEqual([firingInputId('s1', AT)]);
    // Decided again (another wake, another worker, a retry after a crash): nothing more.
    fired.after.whenDue(ms(AT, 5000)).thenNothing();
    expect(onceKey(fired.events[1])).toBe(`schedule-due:s1:${AT}`);
  });

  it('due at its time and after it, not a millisecond before; nothing is due in a conversation with no time set', () => {
    const head = withAt();
    expect([ms(AT, -1), ms(AT), ms(AT, 1)].map((now) => isDue(head.state, now))).toEqual([false, true, true]);
    expect(isDue(given(IDLE).state, ms(AT, 1))).toBe(false);
  });

  it('late only when it fires more than LATE_AFTER_MS after its time', () => {
    const lateAt = (after: number) => withAt().whenDue(ms(AT, after)).events.at(-1);
    expect(lateAt(LATE_AFTER_MS)).toMatchObject({ type: 'schedule.fired', data: { late: false } });
    expect(lateAt(LATE_AFTER_MS + 1)).toMatchObject({ type: 'schedule.fired', data: { late: true } });
  });

  it('a cron schedule croner refuses by the time it is due (made under an older croner) fires its due time once, then ends', () => {
    const made = given(IDLE).and(schedule('s1', 'make', { every: '0 * * * *' }, { sentAt: '2026-12-01T08:30:00.000Z' }));
    const refused = made.events.map((e) => (e.type === 'schedule.made' ? { ...e, data: { ...e.data, schedule: { ...e.data.schedule, every: 'not a cron' } } } : e)) as DomainEvent[];
    const fired = given(refused).whenDue(ms(AT)).thenTypes('input.accepted', 'schedule.fired');
    expect((fired.events[1] as Extract<DomainEvent, { type: 'schedule.fired' }>).data.next).toBeNull();
    expect(fired.state.schedules).toEqual([]);
  });

  it('a cron schedule fires at each time, then moves to its first time after now; missed times fire once, late, with no burst', () => {
    const head = given(IDLE).and(schedule('s1', 'make', { every: '*/10 * * * *' }, { sentAt: '2026-12-01T09:01:00.000Z' }));
    expect(head.state.schedules[0].next).toBe('2026-12-01T09:10:00.000Z');
    const onTime = head.whenDue(ms('2026-12-01T09:10:00.050Z'));
    expect(onTime.events.at(-1)).toMatchObject({ type: 'schedule.fired', data: { at: '2026-12-01T09:10:00.000Z', late: false, next: '2026-12-01T09:20:00.000Z' } });
    expect(onTime.state.schedules[0].lastFiredAt).toBe('2026-12-01T09:10:00.000Z');
    // Every worker down from 09:15 to 11:03: the 09:20 time fires once, late; the next is 11:10.
    const late = onTime.after.whenDue(ms('2026-12-01T11:03:00.000Z')).thenTypes('input.accepted', 'schedule.fired');
    expect(late.events[1]).toMatchObject({ data: { at: '2026-12-01T09:20:00.000Z', late: true, next: '2026-12-01T11:10:00.000Z' } });
  });

  it('past its maxLateness a firing is skipped (late), and a cron schedule moves on', () => {
    withAt(given(IDLE), { maxLateness: 60_000 })
      .whenDue(ms(AT, 60_001))
      .then([{ type: 'schedule.skipped', data: { schedule: 's1', at: AT, reason: 'late', next: null } }]);
    const within = withAt(given(IDLE), { maxLateness: 60_000 }).whenDue(ms(AT, 60_000));
    expect(within.events.at(-1)).toMatchObject({ type: 'schedule.fired', data: { late: true } });
  });

  it('onBusy while a turn runs: enqueue queues a follow-up, steer lands on the turn, skip skips; with no turn each starts one', () => {
    const running = (onBusy: ScheduleFields['onBusy']) => withAt(given(RUNNING), { onBusy }).whenDue(ms(AT));
    expect(running('enqueue').state.queue.map((p) => p.kind)).toEqual(['chat']);
    const steered = running('steer');
    expect(steered.events.find((e) => e.type === 'steer.accepted')?.data).toEqual({ input: { id: firingInputId('s1', AT), text: 'ping' }, turn: 't1', landed: true });
    expect(steered.state.steers.map((p) => p.id)).toEqual([firingInputId('s1', AT)]);
    expect(steered.events.at(-1)).toMatchObject({ type: 'schedule.fired', data: { accepted: true } });
    running('skip').then([{ type: 'schedule.skipped', data: { schedule: 's1', at: AT, reason: 'busy', next: null } }]);
    for (const onBusy of ['enqueue', 'steer', 'skip'] as const) {
      const idle = withAt(given(IDLE), { onBusy }).whenDue(ms(AT));
      expect(idle.state.queue.map((p) => p.id)).toEqual([firingInputId('s1', AT)]);
    }
  });

  it('a firing is a follow-up of its maker`s like another: under the agent`s merge policy it merges with the chat waiting', () => {
    const merging = deciderSpec(agentsWith({ ...policy, queue: 'merge' })).given(RUNNING).and(chat('w'));
    const fired = withAt(merging).whenDue(ms(AT));
    expect(fired.events.find((e) => e.type === 'inputs.collapsed')?.data).toEqual({ into: 'w', from: [firingInputId('s1', AT)], policy: 'merge' });
    expect(fired.state.queue.map((p) => [p.id, p.messages])).toEqual([['w', ['w', 'ping']]]);
  });

  it('unlessUserSpokeSince: skipped when a person`s chat was accepted since it was made or last due; its own firings do not count', () => {
    const every = given(IDLE).and(schedule('s1', 'make', { every: '0 * * * *', unlessUserSpokeSince: true }, { sentAt: '2026-12-01T08:30:00.000Z' }));
    const first = every.whenDue(ms('2026-12-01T09:00:00.000Z'));
    expect(first.events.at(-1)?.type).toBe('schedule.fired');
    // Nobody spoke since: its own firing at 09:00 does not make the 10:00 one skip.
    expect(first.after.whenDue(ms('2026-12-01T10:00:00.000Z')).events.at(-1)?.type).toBe('schedule.fired');
    // A person spoke at 09:30: the 10:00 time is skipped, and the window starts again from it.
    const spoke = first.after.and(chat('p1', { sentAt: '2026-12-01T09:30:00.000Z' }));
    const skipped = spoke.whenDue(ms('2026-12-01T10:00:00.000Z'));
    expect(skipped.events).toEqual([{ type: 'schedule.skipped', data: { schedule: 's1', at: '2026-12-01T10:00:00.000Z', reason: 'spoke', next: '2026-12-01T11:00:00.000Z' } }]);
    expect(skipped.after.whenDue(ms('2026-12-01T11:00:00.000Z')).events.at(-1)?.type).toBe('schedule.fired');
    // Another schedule's firing is no person speaking either.
    const two = given(IDLE)
      .and(schedule('s2', 'make', { at: '2026-12-01T08:00:00.000Z' }))
      .and(schedule('s1', 'make', { at: AT, unlessUserSpokeSince: true }));
    const afterOther = two.whenDue(ms('2026-12-01T08:00:00.000Z')).after;
    expect(afterOther.whenDue(ms(AT)).events.at(-1)?.type).toBe('schedule.fired');
  });

  it('a firing runs as its maker: refused once (forbidden) when the maker lost write, and the schedule moves on', () => {
    const bobs = given(IDLE)
      .and(grant('g1', 'bob', 'write'))
      .and(schedule('s1', 'make', { every: '0 * * * *' }, { subject: 'bob', sentAt: '2026-12-01T08:30:00.000Z' }))
      .and(grant('g2', 'bob', null));
    const refused = bobs.whenDue(ms(AT)).thenTypes('input.rejected', 'schedule.fired');
    expect(refused.events[0]).toMatchObject({ data: { input: { id: firingInputId('s1', AT), kind: 'chat' }, code: 'forbidden' } });
    expect(refused.events[1]).toMatchObject({ data: { accepted: false, next: '2026-12-01T10:00:00.000Z' } });
    refused.after.whenDue(ms(AT, 1000)).thenNothing();
  });

  it('made, changed and cancelled by a writer; refused: read-only subject, unknown schedule, id taken, too many, a bad cron or text, a conversation nobody opened', () => {
    const made = withAt();
    made.when(schedule('c1', 'change', { at: '2026-12-02T09:00:00.000Z' })).thenTypes('schedule.changed');
    const moved = made.and(schedule('c1', 'change', { every: '0 8 * * *', tz: 'Europe/Paris' }));
    expect(moved.state.schedules[0]).toMatchObject({ at: null, every: '0 8 * * *', tz: 'Europe/Paris', next: '2026-11-30T07:00:00.000Z' });
    const cancelled = made.and(schedule('x1', 'cancel'));
    expect(cancelled.state.schedules).toEqual([]);
    expect(cancelled.state.dueAt).toBeNull();
    cancelled.whenDue(ms(AT)).thenNothing();
    given(IDLE).and(grant('g', 'bob', 'read')).when(schedule('s1', 'make', { at: AT }, { subject: 'bob' })).thenRefused('forbidden');
    made.when(schedule('x2', 'cancel', {}, { schedule: 'nope' })).thenRefused('not_found');
    made.when(schedule('s1', 'make', { at: AT })).thenNothing(); // the same make again: handled before
    made.when(schedule('c2', 'change', { every: 'not a cron' })).thenRefused('invalid');
    made.when(schedule('s9', 'make', { at: AT, messages: ['x'.repeat(SCHEDULE_TEXT_MAX + 1)] })).thenRefused('invalid');
    given([]).when(schedule('s1', 'make', { at: AT })).thenRefused('not_found');
    let full = given(IDLE);
    for (let n = 0; n < SCHEDULES_MAX; n++) full = full.and(schedule(`m${n}`, 'make', { at: AT }));
    full.when(schedule('one-more', 'make', { at: AT })).thenRefused('full');
    expect(receiptKeys(schedule('s1', 'make', { at: AT }))).toEqual(['schedule:s1']);
  });

  it('no record on agent.inputs may carry a firing`s id: it would take the firing`s place', () => {
    expect(InputRecord.safeParse(chat(firingInputId('s1', AT))).success).toBe(false);
    expect(InputRecord.safeParse(chat('s1:fired:soon')).success).toBe(true);
  });

  it('nor a schedule call`s, nor a rollback`s cancel of a call`s schedule: they would take its once key first', () => {
    const call = scheduleCallInputId('t1', 'call_1');
    expect(InputRecord.safeParse(chat(call)).success).toBe(false);
    expect(InputRecord.safeParse(chat(rolledBackScheduleInputId(call))).success).toBe(false);
    expect(InputRecord.safeParse(chat(`${call}:rolled-back-later`)).success).toBe(true);
  });
});

describe('cron times across daylight-saving changes (Europe/Paris)', () => {
  const paris = (every: string, after: string) => nextFiring(every, 'Europe/Paris', new Date(after));

  it('09:00 every day stays 09:00 on the wall clock: 08:00Z before the spring change, 07:00Z after; back to 08:00Z in the autumn', () => {
    expect(paris('0 9 * * *', '2026-03-28T08:00:00Z')).toBe('2026-03-29T07:00:00.000Z');
    expect(paris('0 9 * * *', '2026-03-27T12:00:00Z')).toBe('2026-03-28T08:00:00.000Z');
    expect(paris('0 9 * * *', '2026-10-24T12:00:00Z')).toBe('2026-10-25T08:00:00.000Z');
  });

  it('02:30 does not exist on 2026-03-29 (it fires once, at the first moment after), and happens twice on 2026-10-25 (it fires once)', () => {
    expect(paris('30 2 * * *', '2026-03-28T12:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    const first = paris('30 2 * * *', '2026-10-24T12:00:00Z');
    expect(first).toBe('2026-10-25T00:30:00.000Z');
    expect(paris('30 2 * * *', first as string)).toBe('2026-10-26T01:30:00.000Z');
  });

  it('the decider moves a Paris schedule across the spring change with an injected clock: one firing a day', () => {
    const { given } = deciderSpec();
    const head = given(IDLE).and(schedule('s1', 'make', { every: '0 9 * * *', tz: 'Europe/Paris' }, { sentAt: '2026-03-28T06:00:00.000Z' }));
    expect(head.state.schedules[0].next).toBe('2026-03-28T08:00:00.000Z');
    const saturday = head.whenDue(new Date('2026-03-28T08:00:00.000Z'));
    expect(saturday.events.at(-1)).toMatchObject({ data: { next: '2026-03-29T07:00:00.000Z' } });
    saturday.after.whenDue(new Date('2026-03-29T06:59:59.999Z')).thenNothing();
    const sunday = saturday.after.whenDue(new Date('2026-03-29T07:00:00.000Z'));
    expect(types(sunday.events)).toEqual(['input.accepted', 'schedule.fired']);
    expect(sunday.events.at(-1)).toMatchObject({ data: { at: '2026-03-29T07:00:00.000Z', next: '2026-03-30T07:00:00.000Z' } });
  });
});

describe('a schedule’s decisions, receipts and fields, each exactly', () => {
  const { given } = deciderSpec();
  const made = given(IDLE).and(schedule('s1', 'make', { at: AT }));
  const NOW = new Date(sentAt);

  it('its refusals say why: nobody opened, an id taken, an unknown schedule to change or cancel, no text, no time', () => {
    const message = (decided: { events: DomainEvent[] }) => (decided.events[0]?.type === 'schedule.refused' ? decided.events[0].data.message : undefined);
    expect(message(given([]).when(schedule('s1', 'make', { at: AT })))).toBe('nobody has written to this conversation yet: a schedule belongs to an opened conversation');
    expect(message(made.when(schedule('s1b', 'make', { at: AT }, { schedule: 's1' })))).toBe('the conversation has a schedule s1 already');
    expect(message(given(IDLE).when(schedule('c1', 'change', { at: AT })))).toBe('the conversation has no schedule s1');
    expect(message(given(IDLE).when(schedule('x1', 'cancel')))).toBe('the conversation has no schedule s1');
    expect(message(given(IDLE).when(schedule('s2', 'make', { at: AT, messages: [] })))).toBe('a schedule needs text or messages');
    expect(message(given(IDLE).when(schedule('s2', 'make', {})))).toBe('a schedule needs at or every');
    expect(message(given(IDLE).when(schedule('s2', 'make', { at: AT, messages: ['x'.repeat(SCHEDULE_TEXT_MAX + 1)] })))).toBe(
      `a schedule's text is at most ${SCHEDULE_TEXT_MAX} characters (${SCHEDULE_TEXT_MAX + 1} given)`,
    );
    // Each with its code.
    made.when(schedule('s1b', 'make', { at: AT }, { schedule: 's1' })).thenRefused('exists');
    given(IDLE).when(schedule('c1', 'change', { at: AT })).thenRefused('not_found');
    // A make whose fields leave out the messages (none of its own to keep) has none.
    const { messages: _none, ...noMessages } = { ...DEFAULTS, at: AT };
    expect(message(given(IDLE).when({ ...base, type: 'schedule', id: 's3', op: 'make', schedule: 's3', fields: noMessages } as InputRecord))).toBe('a schedule needs text or messages');
    // Exactly SCHEDULE_TEXT_MAX characters is a schedule.
    given(IDLE).when(schedule('s4', 'make', { at: AT, messages: ['x'.repeat(SCHEDULE_TEXT_MAX)] })).thenTypes('schedule.made');
  });

  it('the bound counts makes only: a full conversation still changes a schedule', () => {
    let full = given(IDLE);
    for (let n = 0; n < SCHEDULES_MAX; n++) full = full.and(schedule(`m${n}`, 'make', { at: AT }));
    full.when(schedule('c1', 'change', { at: '2026-12-02T09:00:00.000Z' }, { schedule: 'm0' })).thenTypes('schedule.changed');
  });

  it('a change keeps every field it does not give, and its last firing; a change or a cancel leaves the other schedules', () => {
    const first = given(IDLE).and(
      schedule('s1', 'make', { every: '0 9 * * *', tz: 'Europe/Paris', messages: ['a', 'b'], onBusy: 'steer', unlessUserSpokeSince: true, maxLateness: 60_000 }),
      schedule('s2', 'make', { at: AT }),
    );
    const fired = first.andStored({ type: 'schedule.fired', data: { schedule: 's1', at: '2026-11-30T08:00:00.000Z', late: false, input: 'f', accepted: false, next: '2026-12-01T08:00:00.000Z' } });
    expect(fired.state.schedules.find((s) => s.id === 's2')?.next).toBe(AT);
    const before = fired.state.schedules.find((s) => s.id === 's1')!;
    const changed = fired.and(schedule('c1', 'change', { messages: ['c'] }));
    const [s1, s2] = changed.state.schedules;
    // Its next time is the cron's first after the change.
    expect(s1).toEqual({ ...before, messages: ['c'], next: nextFiring('0 9 * * *', 'Europe/Paris', NOW) });
    expect(s1.lastFiredAt).toBe('2026-11-30T08:00:00.000Z');
    expect(s2).toEqual(fired.state.schedules[1]);
    expect(changed.and(schedule('x1', 'cancel')).state.schedules.map((s) => s.id)).toEqual(['s2']);
    // A change giving the zone or the lateness as null clears it.
    const cleared = fired.and(schedule('c2', 'change', { tz: null, maxLateness: null })).state.schedules[0];
    expect([cleared.tz, cleared.maxLateness, cleared.every]).toEqual([null, null, '0 9 * * *']);
  });

  it('its receipts: each decision answers the same op on the same schedule under its id; another is an id reused', () => {
    const madeEvent = made.events.at(-1)!;
    const view = madeEvent.type === 'schedule.made' ? madeEvent.data.schedule : null;
    expect(receiptOf(schedule('s1', 'make', { at: AT }), madeEvent)).toEqual({ answer: { schedule: view } });
    expect(receiptOf(schedule('s1', 'make', { at: AT }, { schedule: 'other' }), madeEvent)).toEqual({ reused: true });
    expect(receiptOf(schedule('s1', 'change', { at: AT }, { schedule: 's1' }), madeEvent)).toEqual({ reused: true });
    const [changed] = made.when(schedule('c1', 'change', { at: '2026-12-02T09:00:00.000Z' })).events;
    expect(receiptOf(schedule('c1', 'change', { at: AT }), changed)).toEqual({ answer: { schedule: { ...view, at: '2026-12-02T09:00:00.000Z', next: '2026-12-02T09:00:00.000Z' } } });
    expect(receiptOf(schedule('c1', 'change', { at: AT }, { schedule: 'other' }), changed)).toEqual({ reused: true });
    expect(receiptOf(schedule('c1', 'make', { at: AT }, { schedule: 's1' }), changed)).toEqual({ reused: true });
    const [cancelled] = made.when(schedule('x1', 'cancel')).events;
    expect(receiptOf(schedule('x1', 'cancel'), cancelled)).toEqual({ answer: { schedule: null } });
    expect(receiptOf(schedule('x1', 'cancel', {}, { schedule: 'other' }), cancelled)).toEqual({ reused: true });
    expect(receiptOf(schedule('x1', 'change', { at: AT }), cancelled)).toEqual({ reused: true });
    const [refused] = made.when(schedule('x2', 'cancel', {}, { schedule: 'nope' })).events;
    expect(receiptOf(schedule('x2', 'cancel', {}, { schedule: 'nope' }), refused)).toEqual({ refusal: { code: 'not_found', message: 'the conversation has no schedule nope' } });
    expect(receiptOf(schedule('x2', 'cancel'), refused)).toEqual({ reused: true });
    expect(receiptOf(schedule('x2', 'change', { at: AT }, { schedule: 'nope' }), refused)).toEqual({ reused: true });
    // Each decision's event holds its input's receipt key: a redelivered input adds nothing.
    for (const [input, event] of [
      [schedule('c1', 'change', { at: AT }), changed],
      [schedule('x1', 'cancel'), cancelled],
      [schedule('x2', 'cancel', {}, { schedule: 'nope' }), refused],
    ] as const) {
      expect(receiptKeys(input)).toEqual([onceKey(event)]);
    }
    // A time of a schedule is fired or skipped once: both under the same key.
    expect(onceKey({ type: 'schedule.skipped', data: { schedule: 's1', at: AT, reason: 'late', next: null } })).toBe(`schedule-due:s1:${AT}`);
  });

  it('the fields of a body: only those given, each checked', () => {
    expect(scheduleFieldsOf({}, NOW)).toStrictEqual({ fields: {} });
    const all: ScheduleFieldsGiven = { at: AT, tz: 'Europe/Paris', messages: ['a', 'b'], onBusy: 'steer', unlessUserSpokeSince: true, maxLateness: 5000 };
    expect(scheduleFieldsOf(all, NOW)).toStrictEqual({ fields: all });
    expect(scheduleFieldsOf({ text: 'hi' }, NOW)).toStrictEqual({ fields: { messages: ['hi'] } });
    // An `at` up to AT_PASSED_MS in the past is taken; one a moment more is refused.
    const passed = new Date(NOW.getTime() - AT_PASSED_MS).toISOString();
    expect(scheduleFieldsOf({ at: passed }, NOW)).toStrictEqual({ fields: { at: passed } });
    const older = new Date(NOW.getTime() - AT_PASSED_MS - 1).toISOString();
    expect(scheduleFieldsOf({ at: older }, NOW)).toEqual({ path: 'at', message: `${older} passed more than 60 s ago (it is ${NOW.toISOString()})`, detail: 'has passed' });
    // A cron is checked in the zone given.
    expect(scheduleFieldsOf({ every: '0 9 * * *', tz: 'Nowhere/Land' }, NOW)).toMatchObject({ path: 'every' });
    expect(scheduleFieldsOf({ messages: ['x'.repeat(SCHEDULE_TEXT_MAX)] }, NOW)).toStrictEqual({ fields: { messages: ['x'.repeat(SCHEDULE_TEXT_MAX)] } });
    expect(scheduleFieldsOf({ messages: ['x'.repeat(SCHEDULE_TEXT_MAX + 1)] }, NOW)).toEqual({
      path: 'text',
      message: `a schedule's text is at most ${SCHEDULE_TEXT_MAX} characters (${SCHEDULE_TEXT_MAX + 1} given)`,
      detail: 'too long',
    });
  });

  it('a cron that never fires again is refused as such; one of no zone is read in UTC, whatever the process’s zone', () => {
    expect(cronError('0 0 30 2 *', null, NOW)).toBe(`the cron expression 0 0 30 2 * never fires after ${NOW.toISOString()}`);
    const zone = process.env.TZ;
    process.env.TZ = 'Asia/Tokyo';
    try {
      expect(nextFiring('0 9 * * *', null, NOW)).toBe('2026-11-30T09:00:00.000Z');
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('a schedule as the API answers it: its fields, its messages as one text', () => {
    const view = made.state.schedules[0];
    const { spokenAt: _spoken, ...fields } = view;
    expect(scheduleItem(view)).toEqual({ ...fields, text: 'ping' });
  });
});
