import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { agentsWith, chat, deciderSpec, IDLE, policy, RUNNING, sentAt, steer, types } from '../testing/decider-spec';
import { dueOf } from '../state';
import { onceKey } from '../event-rules';
import { receiptOf } from '../receipts';

const latest = deciderSpec(agentsWith({ ...policy, queue: 'latest' }));
const merge = deciderSpec(agentsWith({ ...policy, queue: 'merge' }));
const each = deciderSpec();
const debounced = deciderSpec(agentsWith({ ...policy, queue: { debounceMs: 1000 } }));

/** `ms` after the specs' `sentAt`, as the record's time (`sentAt`) or the decider's (`now`). */
const at = (ms: number) => new Date(Date.parse(sentAt) + ms);
const sent = (ms: number) => ({ sentAt: at(ms).toISOString() });
const held = (input: string, ms: number): DomainEvent => ({ type: 'queue.held', data: { input, until: at(ms).toISOString() } });

const collapsed = (into: string, from: string[], how: 'latest' | 'merge'): DomainEvent => ({ type: 'inputs.collapsed', data: { into, from, policy: how } });
/** The queue as [id, text]. */
const waiting = (state: { queue: { id: string; text: string }[] }) => state.queue.map((p) => [p.id, p.text]);
const ended: DomainEvent = { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'ok', steered: [] } };

describe("a follow-up under its agent's (or its own) queue policy", () => {
  it('latest: a new follow-up answers the waiting ones as collapsed into it; it alone waits, and it alone is a turn', () => {
    const head = latest.given(RUNNING).and(chat('a'), chat('b'));
    expect(waiting(head.state)).toEqual([['b', 'b']]);
    const decided = head.when(chat('c'));
    expect(decided.events.map((e) => e.type)).toEqual(['input.accepted', 'inputs.collapsed']);
    expect(decided.events[0]).toMatchObject({ data: { ahead: 1 } });
    expect(decided.events[1]).toEqual(collapsed('c', ['b'], 'latest'));
    expect(waiting(decided.state)).toEqual([['c', 'c']]);
    const started = decided.after.andStored(ended).whenTurnStarts('t2');
    expect(started.events[0]).toEqual({ type: 'turn.started', data: { turn: 't2', prompt: { id: 'c', text: 'c' } } });
  });

  it('latest: 50 follow-ups while a turn runs leave one waiting; each of the other 49 is collapsed exactly once, into the one after it', () => {
    const ids = Array.from({ length: 50 }, (_, i) => `c${i}`);
    const head = latest.given(RUNNING).and(...ids.map((id) => chat(id)));
    expect(waiting(head.state)).toEqual([['c49', 'c49']]);
    const from = head.events.flatMap((e) => (e.type === 'inputs.collapsed' ? e.data.from : []));
    expect(from).toEqual(ids.slice(0, 49));
  });

  it('latest keeps what is no follow-up: a steer that did not land keeps its turn', () => {
    const head = latest.given(IDLE).and(chat('a'), steer('s'), chat('b'));
    expect(waiting(head.state)).toEqual([['s', 's'], ['b', 'b']]);
  });

  it('merge: the waiting follow-ups become one turn whose prompt is all of them, in order, as a chat of several messages', () => {
    const head = merge.given(RUNNING).and(chat('a'), chat('b'));
    const decided = head.when(chat('c'));
    expect(decided.events[1]).toEqual(collapsed('a', ['c'], 'merge'));
    expect(decided.events[0]).toMatchObject({ data: { ahead: 1 } });
    expect(decided.state.queue).toMatchObject([{ id: 'a', messages: ['a', 'b', 'c'], text: 'a\n\nb\n\nc' }]);
    const started = decided.after.andStored(ended).whenTurnStarts('t2');
    expect(started.events[0]).toEqual({ type: 'turn.started', data: { turn: 't2', prompt: { id: 'a', text: 'a\n\nb\n\nc' } } });
  });

  it('merge: nothing waiting, or a steer waiting last, and the follow-up waits as a turn of its own', () => {
    merge.given(IDLE).when(chat('a')).thenTypes('input.accepted');
    const head = merge.given(IDLE).and(chat('a'), steer('s'), chat('b'));
    expect(waiting(head.state)).toEqual([['a', 'a'], ['s', 's'], ['b', 'b']]);
  });

  it("a chat's own queue overrides its agent's, either way", () => {
    const head = each.given(RUNNING).and(chat('a'), chat('b', { queue: 'latest' }));
    expect(waiting(head.state)).toEqual([['b', 'b']]);
    const kept = latest.given(RUNNING).and(chat('a'), chat('b', { queue: 'each' }));
    expect(waiting(kept.state)).toEqual([['a', 'a'], ['b', 'b']]);
  });

  it('a chat that winds the running turn down keeps its turn and collapses nothing', () => {
    const head = latest.given(RUNNING).and(chat('a'));
    head.when(chat('b', { onBusy: 'interrupt' })).thenTypes('input.accepted', 'stop.requested');
  });

  it('a chat that continues an input keeps its turn and collapses nothing, under any policy', () => {
    // Continuing the running turn's input: it winds that turn down and runs next, before the follow-up waiting.
    const next = latest.given(RUNNING).and(chat('a')).when(chat('r', { continues: 'p0' }));
    expect(types(next.events)).toEqual(['input.accepted', 'stop.requested']);
    expect(waiting(next.state)).toEqual([['r', 'r'], ['a', 'a']]);
    // Continuing the follow-up waiting last: it queues behind it as a turn of its own, not merged into it, and holds nothing.
    for (const spec of [merge, debounced]) {
      const behind = spec.given(IDLE).and(chat('a')).when(chat('r', { continues: 'a' }));
      expect(types(behind.events)).toEqual(['input.accepted']);
      expect(waiting(behind.state)).toEqual([['a', 'a'], ['r', 'r']]);
    }
  });

  it('each (the default) collapses nothing', () => {
    const head = each.given(RUNNING).and(chat('a'), chat('b'));
    expect(waiting(head.state)).toEqual([['a', 'a'], ['b', 'b']]);
  });
});

describe('a follow-up under queue: {debounceMs}', () => {
  // A spec's batch is decided when its last record was sent (`sent`): time is the records' data.
  it('holds the queue until debounceMs after it was accepted: no turn starts before, one starts after; the state is due then', () => {
    const decided = debounced.given(IDLE).when(chat('a'));
    expect(decided.events.map((e) => e.type)).toEqual(['input.accepted', 'queue.held']);
    expect(decided.events[1]).toEqual(held('a', 1000));
    expect(decided.state.dueAt).toBe(at(1000).toISOString());
    decided.after.whenTurnStarts('t1', at(999)).thenTypes();
    const started = decided.after.whenTurnStarts('t1', at(1000));
    expect(started.events[0]).toEqual({ type: 'turn.started', data: { turn: 't1', prompt: { id: 'a', text: 'a' } } });
    // A turn runs: nothing is due any more (its end starts the next).
    expect(started.state).toMatchObject({ heldUntil: null, dueAt: null });
  });

  it('follow-ups accepted less than debounceMs apart merge into one turn, in order, held until the last one was quiet long enough', () => {
    const head = debounced.given(IDLE).and(chat('a')).and(chat('b', sent(100))).and(chat('c', sent(200)));
    const merges = head.events.filter((e) => e.type === 'inputs.collapsed');
    expect(merges).toEqual([collapsed('a', ['b'], 'merge'), collapsed('a', ['c'], 'merge')]);
    expect(head.state.queue).toMatchObject([{ id: 'a', messages: ['a', 'b', 'c'] }]);
    expect(head.state.dueAt).toBe(at(1200).toISOString());
    head.whenTurnStarts('t1', at(1100)).thenTypes();
    expect(head.whenTurnStarts('t1', at(1200)).events[0]).toEqual({ type: 'turn.started', data: { turn: 't1', prompt: { id: 'a', text: 'a\n\nb\n\nc' } } });
  });

  it('a follow-up after the turn started is a turn of its own, held again from its own acceptance', () => {
    const head = debounced.given(IDLE).and(chat('a')).andTurnStarts('t1', at(1000)).and(chat('b', sent(1500)));
    expect(head.events.filter((e) => e.type === 'inputs.collapsed')).toEqual([]);
    expect(head.state.queue.map((p) => p.id)).toEqual(['b']);
    // While the turn runs the hold is not due: its end is what looks at the queue again.
    expect(head.state.dueAt).toBeNull();
    const ended = head.andStored({ type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'ok', steered: [] } });
    expect(ended.state.dueAt).toBe(at(2500).toISOString());
    ended.whenTurnStarts('t2', at(2499)).thenTypes();
    ended.whenTurnStarts('t2', at(2500)).thenTypes('turn.started', 'input.delivered');
  });

  it('a redelivered record holds nothing again, and moves no hold', () => {
    const head = debounced.given(IDLE).and(chat('a'));
    head.when(chat('a', sent(700))).thenTypes();
  });

  it("a chat's own {debounceMs} overrides its agent's queue; one that winds the running turn down holds nothing", () => {
    expect(each.given(IDLE).when(chat('a', { queue: { debounceMs: 250 } })).events[1]).toEqual(held('a', 250));
    debounced.given(RUNNING).when(chat('b', { onBusy: 'interrupt' })).thenTypes('input.accepted', 'stop.requested');
  });

  it('a queue emptied while held is due at nothing', () => {
    const head = debounced.given(IDLE).and(chat('a'));
    const retracted = head.when({ v: 1, conversation: 'c', subject: 'alice', sentAt, type: 'retract', id: 'x', target: { id: 'a' } });
    expect(retracted.state.queue).toEqual([]);
    expect(dueOf(retracted.state)).toBeNull();
  });
});

describe('what a collapse and a hold leave', () => {
  it("a chat's place counts what still waits ahead of it under each policy: not what it collapsed, nor the one it merged into", () => {
    const aheadOf = (spec: typeof each) => {
      const [accepted] = spec.given(RUNNING).and(chat('a'), chat('b')).when(chat('c')).events;
      return accepted.type === 'input.accepted' ? accepted.data.ahead : undefined;
    };
    // Under merge, b merged into a: c merges into a too, and waits where a waits, behind the running turn.
    expect([aheadOf(each), aheadOf(merge), aheadOf(latest)]).toEqual([3, 1, 1]);
    // A chat's own latest collapses every follow-up waiting, however many: only the running turn is ahead of it.
    const [own] = each.given(RUNNING).and(chat('a'), chat('b')).when(chat('c', { queue: 'latest' })).events;
    expect(own).toMatchObject({ type: 'input.accepted', data: { ahead: 1 } });
    const [accepted] = each.given(RUNNING).and(chat('a'), chat('b')).when(chat('c')).events;
    expect(receiptOf(chat('c'), accepted)).toEqual({ answer: { ahead: 3 } });
    // Stored before the worker recorded it: the input was next.
    const { ahead: _recorded, ...older } = accepted.data as { ahead?: number };
    expect(receiptOf(chat('c'), { type: 'input.accepted', data: older } as DomainEvent)).toEqual({ answer: { ahead: 0 } });
  });

  it('merge joins only the follow-up it merges into; the others waiting keep their messages', () => {
    const head = merge.given(IDLE).and(steer('s'), chat('a'));
    const decided = head.when(chat('b'));
    expect(decided.events[1]).toEqual(collapsed('a', ['b'], 'merge'));
    expect(decided.state.queue.map((p) => [p.id, p.messages])).toEqual([
      ['s', ['s']],
      ['a', ['a', 'b']],
    ]);
  });

  it('latest with no follow-up waiting (a steer that did not land only) collapses nothing', () => {
    latest.given(RUNNING).and(steer('s')).when(chat('c')).thenTypes('input.accepted');
  });

  it("a hold is the longer of the one the queue has and the new one, whichever is stored first", () => {
    const holds = (...events: DomainEvent[]) => debounced.given(IDLE).andStored(...events).state.heldUntil;
    expect(holds(held('a', 2000), held('b', 1000))).toBe(at(2000).toISOString());
    expect(holds(held('a', 1000), held('b', 2000))).toBe(at(2000).toISOString());
  });

  it('each hold and each collapse is stored once, by the input that made it', () => {
    // An input id holds no comma: the ids collapsed, joined by one, are told apart (a and b from ab).
    const keys = [held('a', 1000), held('b', 1000), collapsed('c', ['a'], 'latest'), collapsed('c', ['a', 'b'], 'latest'), collapsed('d', ['a'], 'merge'), collapsed('c', ['ab'], 'merge')].map(onceKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(onceKey(held('a', 1000))).toBe(onceKey(held('a', 5000)));
  });
});
