import { describe, expect, it } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import { onceKey } from './event-rules';
import { receiptIds, receiptIdsOf, receiptKeys, receiptOf, settlingTypes } from './receipts';
import { agentsWith, base, deciderSpec, IDLE, RUNNING, type Given } from './testing/decider-spec';

const chat = (id: string, text = id): InputRecord => ({ ...base, type: 'chat', id, messages: [text], onBusy: 'enqueue' });
const steer = (id: string, text = id): InputRecord => ({ ...base, type: 'steer', id, text });
const { given } = deciderSpec(agentsWith({ maxTaken: 16, bounds: { steers: 1, chats: 1, chars: 8000 } }));
const idle = () => given(IDLE);
const running = () => given(RUNNING);

/** Inputs in the states that make each kind of decision, and the head they are decided on. */
const cases: { name: string; head: () => Given; before: InputRecord[]; input: InputRecord; outcome: string }[] = [
  { name: 'a chat accepted', head: idle, before: [], input: chat('c1'), outcome: 'answer' },
  { name: 'a chat refused (queue full)', head: running, before: [chat('q1')], input: chat('c2'), outcome: 'refusal' },
  { name: 'a steer landing', head: running, before: [], input: steer('s1'), outcome: 'answer' },
  { name: 'a steer refused (too many)', head: running, before: [steer('s0')], input: steer('s2'), outcome: 'refusal' },
  { name: 'a stop', head: running, before: [], input: { ...base, type: 'stop', id: 'x1', discardPending: false }, outcome: 'answer' },
  { name: 'a stop refused', head: running, before: [], input: { ...base, subject: 'mallory', type: 'stop', id: 'x2', discardPending: false }, outcome: 'refusal' },
  { name: 'a retraction', head: running, before: [chat('q1')], input: { ...base, type: 'retract', id: 'r1', target: { id: 'q1' } }, outcome: 'answer' },
  { name: 'a retraction refused', head: idle, before: [], input: { ...base, type: 'retract', id: 'r2', target: { id: 'nobody' } }, outcome: 'refusal' },
  { name: 'a promotion', head: running, before: [chat('q1')], input: { ...base, type: 'promote', id: 'p1', target: 'q1' }, outcome: 'answer' },
  { name: 'a promotion refused', head: idle, before: [], input: { ...base, type: 'promote', id: 'p2', target: 'nobody' }, outcome: 'refusal' },
  { name: 'a grant', head: idle, before: [], input: { ...base, type: 'grant', id: 'g1', grantee: 'bob', access: 'read' }, outcome: 'answer' },
  { name: 'a grant refused', head: idle, before: [], input: { ...base, subject: 'bob', type: 'grant', id: 'g2', grantee: 'carol', access: 'read' }, outcome: 'refusal' },
  { name: 'an edit', head: running, before: [chat('q1')], input: { ...base, type: 'edit', id: 'e1', target: 'q1', to: { text: 'new' } }, outcome: 'answer' },
  { name: 'a rollback (stopping the running turn)', head: running, before: [], input: { ...base, type: 'rollback', id: 'b1', asked: { turns: 1 }, stopRunning: true }, outcome: 'answer' },
  { name: 'a rollback refused (busy)', head: running, before: [], input: { ...base, type: 'rollback', id: 'b2', asked: { turns: 1 } }, outcome: 'refusal' },
  { name: 'an edit refused', head: running, before: [], input: { ...base, type: 'edit', id: 'e2', target: 'nobody', to: { text: 'new' } }, outcome: 'refusal' },
  { name: 'a move', head: running, before: [chat('q1')], input: { ...base, type: 'move', id: 'm1', target: 'q1', before: null }, outcome: 'answer' },
  { name: 'a move refused', head: running, before: [], input: { ...base, type: 'move', id: 'm2', target: 'nobody', before: null }, outcome: 'refusal' },
];

describe('receipts: what answers each input, and how', () => {
  it.each(cases)('$name: the decision holds one receipt of it, with that outcome, found by the ids it names', ({ head, before, input, outcome }) => {
    const { events } = head().and(...before).when(input);
    const outcomes = events.flatMap((event) => {
      const read = receiptOf(input, event);
      return read === undefined ? [] : [{ event, read }];
    });
    expect(outcomes.map(({ read }) => Object.keys(read)[0])).toEqual([outcome]);
    // Found among recent events by an id the request waits on.
    expect(receiptIds(outcomes[0].event).some((id) => receiptIdsOf(input).includes(id))).toBe(true);
  });

  it.each(cases)("$name: every event that settles it is one of the worker's receipt keys", ({ head, before, input }) => {
    const { events } = head().and(...before).when(input);
    const settling = events.filter((event: DomainEvent) => settlingTypes(input.type).includes(event.type) && receiptIds(event).some((id) => receiptIdsOf(input).includes(id)));
    expect(settling.length).toBeGreaterThan(0);
    for (const event of settling) expect(receiptKeys(input)).toContain(onceKey(event));
  });

  it.each([
    ['a steer landing', { answer: { turn: 't1', landed: true } }],
    ['a stop', { answer: { turn: 't1' } }],
    ['a retraction', { answer: { id: 'q1', text: 'q1' } }],
    ['a promotion', { answer: { turn: 't1', landed: true } }],
    ['a grant', { answer: { subject: 'bob', access: 'read' } }],
  ])('%s: its answer says what was decided', (name, answer) => {
    const { head, before, input } = cases.find((c) => c.name === name)!;
    const reads = head().and(...before).when(input).events.map((event) => receiptOf(input, event));
    expect(reads.filter((read) => read !== undefined)).toEqual([answer]);
  });

  it('another input under the id is no answer to this one: the id is reused', () => {
    const { events } = idle().when(chat('same', 'book a train'));
    const accepted = events.find((event) => event.type === 'input.accepted')!;
    expect(receiptOf(chat('same', 'book a flight'), accepted)).toEqual({ reused: true });
    expect(receiptOf(steer('same', 'book a train'), accepted)).toEqual({ reused: true });
  });

  it('an event of a receipt type that answers another id is no receipt of this input', () => {
    const { events } = idle().when(chat('other'), { ...base, type: 'stop', id: 'x1', discardPending: false });
    for (const event of events) expect(receiptOf(chat('mine'), event)).toBeUndefined();
    expect(receiptOf({ ...base, type: 'stop', id: 'x2', discardPending: false }, events.at(-1)!)).toBeUndefined();
  });

  it('a failed guard answers only a send it follows, and settles nothing', () => {
    const failed: DomainEvent = { type: 'guard.failed', data: { input: { id: 'c1', kind: 'chat' }, attempt: 'a', message: 'timed out' } };
    expect(receiptOf(chat('c1'), failed, true)).toEqual({ guardFailed: 'timed out' });
    expect(receiptOf(chat('c1'), failed, false)).toBeUndefined();
    expect(settlingTypes('chat')).not.toContain('guard.failed');
  });
});
