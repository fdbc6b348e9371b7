import { describe, expect, it } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import { onceKey } from '../event-rules';
import { receiptKeys, receiptOf } from '../receipts';
import { base, chat, deciderSpec, IDLE, retract, RUNNING, steer } from '../testing/decider-spec';

const { given } = deciderSpec();

/** A move `id` of input `target` to just before `before` (null: the end). */
const move = (id: string, target: string, before: string | null, extra: { subject?: string } = {}): InputRecord => ({ ...base, type: 'move', id, target, before, ...extra });
const moved = (moveId: string, input: string, before: string | null, position: number): DomainEvent => ({
  type: 'input.moved',
  data: { move: moveId, input, before, position },
});
const ended: DomainEvent = { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'ok', steered: [] } };
/** The queue's ids, in the order its turns start. */
const order = (state: { queue: { id: string }[] }) => state.queue.map((p) => p.id);

describe('a move under the conversation lock', () => {
  it('puts a pending follow-up just before another input waiting in the queue, or at the end (before: null)', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'), chat('c'));
    const first = head.when(move('m1', 'c', 'a')).then([moved('m1', 'c', 'a', 0)]);
    expect(order(first.state)).toEqual(['c', 'a', 'b']);
    const last = head.when(move('m2', 'a', null)).then([moved('m2', 'a', null, 2)]);
    expect(order(last.state)).toEqual(['b', 'c', 'a']);
    const middle = head.when(move('m3', 'a', 'c')).then([moved('m3', 'a', 'c', 1)]);
    expect(order(middle.state)).toEqual(['b', 'a', 'c']);
  });

  it('the turns start in the new order', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'), move('m1', 'b', 'a')).andStored(ended);
    const started = head.whenTurnStarts('t2');
    expect(started.events[0]).toEqual({ type: 'turn.started', data: { turn: 't2', prompt: { id: 'b', text: 'b' } } });
  });

  it("a move stands when what the running turn did not take joins the queue, by when it was sent; so does a steer that did not land", () => {
    // a, then the steer s (it lands on t1), then b; b moved before a.
    const head = given(RUNNING).and(chat('a'), steer('s'), chat('b'), move('m1', 'b', 'a'));
    expect(order(head.state)).toEqual(['b', 'a']);
    // t1 ends without taking s: s joins the queue after a (sent after it), b stays first.
    expect(order(head.andStored(ended).state)).toEqual(['b', 'a', 's']);
    // Idle: a steer is a turn of its own, queued after what waits.
    const idle = given(IDLE).and(chat('x'), chat('y'), chat('z'), move('m2', 'z', 'x'), steer('late'));
    expect(order(idle.state)).toEqual(['z', 'x', 'y', 'late']);
  });

  it("refuses what is not pending — the running turn's prompt, a retracted input, an unknown id — and changes nothing", () => {
    const head = given(RUNNING).and(chat('a'), chat('gone'), retract('r', { id: 'gone' }));
    head.when(move('m1', 'p0', null)).thenRefused('not_found');
    head.when(move('m2', 'gone', null)).thenRefused('not_found');
    const refused = head.when(move('m3', 'nobody', null)).thenRefused('not_found');
    expect(refused.state).toEqual(head.state);
  });

  it('refuses a steer, waiting for the running turn or as a turn of its own: only a follow-up moves', () => {
    given(RUNNING).and(chat('a'), steer('s')).when(move('m1', 's', 'a')).thenRefused('not_follow_up');
    given(IDLE).and(chat('a'), steer('s')).when(move('m2', 's', 'a')).thenRefused('not_follow_up');
  });

  it('refuses a before that is not another input waiting in the queue: itself, a steer of the running turn, the prompt, unknown', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'), steer('s'));
    for (const [id, before] of [['m1', 'a'], ['m2', 's'], ['m3', 'p0'], ['m4', 'nobody']] as const) {
      const refused = head.when(move(id, 'a', before)).thenRefused('before');
      expect(refused.state).toEqual(head.state);
    }
  });

  it('refuses a subject that may not write', () => {
    given(RUNNING).and(chat('a'), chat('b')).when(move('m1', 'b', 'a', { subject: 'mallory' })).thenRefused('forbidden');
  });

  it('is decided once: its decision holds its receipt key, the same move again adds nothing, and its receipt tells it from another move under its id', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'));
    for (const input of [move('m1', 'b', 'a'), move('m2', 'nobody', null)]) {
      const decided = head.when(input);
      expect(decided.events.some((e) => receiptKeys(input).includes(onceKey(e))), input.id).toBe(true);
      decided.after.when(input).thenNothing();
    }
    const [done] = head.when(move('m1', 'b', 'a')).events;
    expect(receiptOf(move('m1', 'b', 'a'), done)).toEqual({ answer: { id: 'b', before: 'a', position: 0 } });
    expect(receiptOf(move('m1', 'b', null), done)).toEqual({ reused: true });
    expect(receiptOf(move('m1', 'a', 'a'), done)).toEqual({ reused: true });
    const [refused] = head.when(move('m3', 'nobody', null)).events;
    expect(receiptOf(move('m3', 'nobody', null), refused)).toMatchObject({ refusal: { code: 'not_found' } });
    expect(receiptOf(move('m3', 'a', null), refused)).toEqual({ reused: true });
  });

  it('a move to where it already is changes no order, and is answered as a move', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'));
    const decided = head.when(move('m1', 'a', 'b')).then([moved('m1', 'a', 'b', 0)]);
    expect(order(decided.state)).toEqual(['a', 'b']);
  });

  it('finds the follow-up it names, not another: a steer that landed is no follow-up, whatever waits in the queue', () => {
    const head = given(RUNNING).and(chat('a'), steer('s'));
    expect(head.state.steers.map((p) => p.id)).toEqual(['s']);
    const [refused] = head.when(move('m1', 's', null)).thenRefused('not_follow_up').events;
    expect(refused).toMatchObject({ data: { message: expect.stringContaining('s is a steer') } });
    head.when(move('m2', 'nobody', null)).thenRefused('not_found');
  });

  it('its refusals name the inputs, and its refusal answers only the same move (target and before) under its id', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'));
    const message = (input: InputRecord) => (head.when(input).events[0].data as { message: string }).message;
    expect(message(move('m1', 'nobody', null))).toContain('nobody');
    expect(message(move('m2', 'a', 'zed'))).toMatch(/zed.*\ba\b/);
    const [refused] = head.when(move('m3', 'a', 'zed')).events;
    expect(receiptOf(move('m3', 'a', 'zed'), refused)).toMatchObject({ refusal: { code: 'before' } });
    expect(receiptOf(move('m3', 'a', 'b'), refused)).toEqual({ reused: true });
    expect(receiptOf(move('m3', 'b', 'zed'), refused)).toEqual({ reused: true });
  });
});
