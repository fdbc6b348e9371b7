import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { agentsWith, chat, deciderSpec, IDLE, policy, RUNNING, steer } from '../testing/decider-spec';

const latest = deciderSpec(agentsWith({ ...policy, queue: 'latest' }));
const merge = deciderSpec(agentsWith({ ...policy, queue: 'merge' }));
const each = deciderSpec();

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

  it('each (the default) collapses nothing', () => {
    const head = each.given(RUNNING).and(chat('a'), chat('b'));
    expect(waiting(head.state)).toEqual([['a', 'a'], ['b', 'b']]);
  });
});
