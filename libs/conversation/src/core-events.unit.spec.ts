import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { evolve, onceKey } from './event-rules';
import { initialState, type Awaiting, type ConversationState, type PendingInput } from './state';
import { IDLE, RUNNING, sentAt } from './testing/decider-spec';

/** The state a log folds to. */
const fold = (events: readonly DomainEvent[], from: ConversationState = initialState()) => events.reduce(evolve, from);

const accepted = (id: string, kind: 'chat' | 'steer', extra: { subject?: string; messages?: string[] } = {}): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind, text: (extra.messages ?? [id]).join('\n\n'), messages: extra.messages ?? [id], subject: extra.subject ?? 'alice', sentAt } },
});
const decided = (id: string, landed: boolean): DomainEvent => ({ type: 'steer.accepted', data: { input: { id, text: id }, turn: landed ? 't1' : null, landed } });
const call = (id: string) => ({ id, name: 'send', arguments: '{}' });
const replied = (turn: string, step: number, ...calls: string[]): DomainEvent => ({ type: 'model.replied', data: { turn, step, content: '', toolCalls: calls.map(call) } });
const result = (turn: string, step: number, callId: string): DomainEvent => ({ type: 'tool.ended', data: { turn, step, callId, name: 'send', result: 'ok', isError: false } });
const asked = (turn: string, step: number, callId: string, expiresAt: string | null = null): DomainEvent => ({
  type: 'approval.requested',
  data: { turn, step, approval: `a-${step}-${callId}`, call: call(callId), requestedAt: sentAt, expiresAt },
});
const ended = (turn: string): DomainEvent => ({ type: 'turn.ended', data: { turn, status: 'completed', outcome: null, content: '', steered: [] } });
const waitingIds = (state: ConversationState) => state.queue.map((i) => i.id);
const awaitingOf = (state: ConversationState) => state.awaiting.map((a: Awaiting) => [a.step, a.callId]);

describe('the once keys of the conversation’s and the turn’s own events', () => {
  // One of each: each names a different happening, so each has a key of its own.
  const distinct: DomainEvent[] = [
    { type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } },
    accepted('c1', 'chat'),
    accepted('c2', 'chat'),
    { type: 'input.rejected', data: { input: { id: 'c1', kind: 'chat', digest: 'd' }, code: 'busy', message: 'busy' } } as DomainEvent,
    { type: 'guard.failed', data: { input: { id: 'c1', kind: 'chat' }, attempt: 'a1', message: 'timed out' } },
    { type: 'guard.failed', data: { input: { id: 'c1', kind: 'chat' }, attempt: 'a2', message: 'timed out' } },
    { type: 'input.delivered', data: { input: { id: 'c1', kind: 'chat' }, turn: 't1' } },
    { type: 'input.delivered', data: { input: { id: 'c2', kind: 'chat' }, turn: 't2' } },
    decided('s1', true),
    decided('s2', false),
    { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } },
    { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's3', text: 's3' } } },
    { type: 'turn.started', data: { turn: 't1', prompt: { id: 'c1', text: 'c1' } } },
    { type: 'turn.started', data: { turn: 't2', prompt: { id: 'c2', text: 'c2' } } },
    ended('t1'),
    ended('t2'),
    { type: 'todos.updated', data: { turn: 't1', step: 0, callId: 'k1', items: [], next: 1 } },
    { type: 'todos.updated', data: { turn: 't1', step: 0, callId: 'k2', items: [], next: 1 } },
    { type: 'todos.updated', data: { turn: 't1', step: 1, callId: 'k1', items: [], next: 1 } },
    { type: 'todos.updated', data: { turn: 't1', step: 0, callId: null, items: [], next: 1 } },
    replied('t1', 0),
    replied('t1', 1),
    replied('t2', 0),
    { type: 'tool.started', data: { turn: 't1', step: 0, call: call('k1') } },
    { type: 'tool.started', data: { turn: 't1', step: 0, call: call('k2') } },
    { type: 'tool.started', data: { turn: 't1', step: 1, call: call('k1') } },
    result('t1', 0, 'k1'),
    result('t1', 0, 'k2'),
    result('t1', 1, 'k1'),
    result('t2', 0, 'k1'),
    asked('t1', 0, 'k1'),
    asked('t1', 0, 'k2'),
    asked('t1', 1, 'k1'),
    { type: 'agent.changed', data: { from: 'default', to: 'specialist', turn: 't1', step: 0 } },
    { type: 'agent.changed', data: { from: 'default', to: 'specialist', turn: 't1', step: 1 } },
    { type: 'history.compacted', data: { turn: 't3', step: 0, summary: 's', through: { turn: 't1', position: 4 }, turns: 1, tokens: 1 } },
    { type: 'history.compacted', data: { turn: 't3', step: 0, summary: 's', through: { turn: 't2', position: 9 }, turns: 2, tokens: 1 } },
  ];

  it('each different happening has a key of its own: by input, turn, step, call, try or turn summarised', () => {
    const keys = distinct.map(onceKey);
    const repeated = keys.filter((key, i) => keys.indexOf(key) !== i);
    expect(repeated).toEqual([]);
    expect(keys.every((key) => key.length > 0)).toBe(true);
  });

  it('the same happening stored again (redone after a crash) has the same key: a step has one reply, accepted or rejected', () => {
    const rejected: DomainEvent = { type: 'answer.rejected', data: { turn: 't1', step: 0, answer: 'no', feedback: 'again', reask: 1 } };
    expect(onceKey(rejected)).toBe(onceKey(replied('t1', 0, 'k1')));
    expect(onceKey(result('t1', 0, 'k1'))).toBe(onceKey({ ...result('t1', 0, 'k1'), data: { ...result('t1', 0, 'k1').data, result: 'other' } } as DomainEvent));
    // A rolled-back turn's plan is undone once, whatever step its end is stored at.
    const undone = (step: number): DomainEvent => ({ type: 'todos.updated', data: { turn: 't1', step, callId: null, items: [], next: 1 } });
    expect(onceKey(undone(0))).toBe(onceKey(undone(3)));
  });
});

describe('how the conversation’s and the turn’s own events evolve the state', () => {
  it('a chat accepted while idle with nothing waiting starts next (not queued); behind a running turn or another chat it is queued', () => {
    expect(fold([...IDLE, accepted('a', 'chat')]).queue).toEqual([{ id: 'a', kind: 'chat', text: 'a', messages: ['a'], subject: 'alice', seq: 1 }]);
    expect(fold([...IDLE, accepted('a', 'chat'), accepted('b', 'chat')]).queue.map((i) => [i.id, i.queued])).toEqual([
      ['a', undefined],
      ['b', true],
    ]);
    expect(fold([...RUNNING, accepted('c', 'chat')]).queue.map((i) => [i.id, i.queued])).toEqual([['c', true]]);
  });

  it('a steer accepted waits undecided, not in the queue, until its decision', () => {
    const state = fold([...RUNNING, accepted('s', 'steer', { subject: 'bob' })]);
    expect(state.queue).toEqual([]);
    expect(state.undecided).toEqual({ id: 's', kind: 'steer', text: 's', messages: ['s'], subject: 'bob', seq: 2, queued: true });
    expect(state.lastInputId).toBe('s');
  });

  it('a steer decided keeps what its acceptance recorded: its subject, messages and place', () => {
    const log = [...RUNNING, accepted('f', 'chat'), accepted('s', 'steer', { subject: 'bob', messages: ['one', 'two'] })];
    const steer: PendingInput = { id: 's', kind: 'steer', text: 'one\n\ntwo', messages: ['one', 'two'], subject: 'bob', seq: 3, queued: true };
    const landed = fold([...log, decided('s', true)]);
    expect(landed.steers).toEqual([steer]);
    expect(landed.undecided).toBeNull();
    const queued = fold([...log, decided('s', false)]);
    expect(queued.queue.map((i) => [i.id, i.subject, i.messages])).toEqual([
      ['f', 'alice', ['f']],
      ['s', 'bob', ['one', 'two']],
    ]);
    expect(queued.undecided).toBeNull();
  });

  it('a steer that did not land waits in acceptance order: after what was sent before it, ahead of what was sent after', () => {
    const before = fold([...RUNNING, accepted('f1', 'chat'), accepted('s', 'steer'), accepted('f2', 'chat')]);
    expect(waitingIds(fold([decided('s', false)], before))).toEqual(['f1', 's', 'f2']);
  });

  it('a follow-up promoted to a steer keeps its own subject and messages; landing takes it out of the queue, not landing leaves the queue as it was', () => {
    const log = [...RUNNING, accepted('f', 'chat', { subject: 'bob', messages: ['x', 'y'] }), accepted('g', 'chat')];
    const landed = fold([...log, decided('f', true)]);
    expect(landed.steers).toEqual([{ id: 'f', kind: 'steer', text: 'x\n\ny', messages: ['x', 'y'], subject: 'bob', seq: 2, queued: true }]);
    expect(waitingIds(landed)).toEqual(['g']);
    expect(landed.steersLanded).toBe(1);
    const stays = fold([...log, decided('f', false)]);
    expect(stays.queue).toEqual(fold(log).queue);
  });

  it('a steer decision with no acceptance before it (an older log) waits as its text alone, from an anonymous subject', () => {
    const state = fold([...RUNNING, decided('old', false)]);
    expect(state.queue).toEqual([{ id: 'old', kind: 'steer', text: 'old', messages: ['old'], subject: 'anonymous', seq: 1 }]);
  });

  it('a steer decision for another input than the undecided one leaves that one’s record alone', () => {
    const state = fold([...RUNNING, accepted('s', 'steer', { subject: 'bob' }), decided('old', true)]);
    expect(state.steers.map((s) => [s.id, s.subject])).toEqual([['old', 'anonymous']]);
  });

  it('a reply opens its calls, for the running turn only; a rejected answer opens none; either records what its request carried', () => {
    const running = fold([...RUNNING, replied('t1', 0, 'k1', 'k2')]);
    expect(running.openCalls).toEqual(['k1', 'k2']);
    expect(fold([replied('t0', 0, 'k9')], running).openCalls).toEqual(['k1', 'k2']);
    const carried = { tokens: 10, maxTokens: 100 };
    const rejected = fold([{ type: 'answer.rejected', data: { turn: 't1', step: 1, answer: 'no', feedback: 'again', reask: 1, carried } }], running);
    expect(rejected.openCalls).toEqual([]);
    expect(rejected.carried).toEqual(carried);
    expect(fold([{ type: 'answer.rejected', data: { turn: 't0', step: 1, feedback: 'again', reask: 1 } }], running).openCalls).toEqual(['k1', 'k2']);
    expect(fold([{ ...replied('t1', 1), data: { ...(replied('t1', 1).data as object), carried } } as DomainEvent], running).carried).toEqual(carried);
  });

  it('a result closes its own call of its own step only, and only of the running turn', () => {
    const steps = fold([...RUNNING, replied('t1', 0, 'k1', 'k2'), asked('t1', 0, 'k1'), asked('t1', 0, 'k2'), asked('t1', 1, 'k1')]);
    expect(awaitingOf(fold([result('t1', 0, 'k1')], steps))).toEqual([
      [0, 'k2'],
      [1, 'k1'],
    ]);
    const two = fold([...RUNNING, replied('t1', 0, 'k1', 'k2'), asked('t1', 0, 'k1'), asked('t1', 0, 'k2')]);
    expect(awaitingOf(fold([result('t1', 0, 'k2')], two))).toEqual([[0, 'k1']]);
    expect(fold([result('t1', 0, 'k2')], two).openCalls).toEqual(['k1']);
    // Call ids are the model's, unique within a step: an earlier turn's result with the same step and id is not this turn's.
    const stale = fold([result('t0', 0, 'k1')], two);
    expect(awaitingOf(stale)).toEqual([
      [0, 'k1'],
      [0, 'k2'],
    ]);
    expect(stale.openCalls).toEqual(['k1', 'k2']);
  });

  it('an approval asked for a turn that is not running adds nothing to what waits', () => {
    const state = fold([...RUNNING, replied('t1', 0, 'k1')]);
    expect(fold([asked('t0', 0, 'k1')], state).awaiting).toEqual([]);
    expect(fold([asked('t1', 0, 'k1')], state).awaiting.map((a) => [a.turn, a.callId, a.agent])).toEqual([['t1', 'k1', 'default']]);
  });

  it('a turn’s end sends the steers it did not take back to the queue, in acceptance order', () => {
    const log = [...RUNNING, accepted('f', 'chat'), accepted('s', 'steer'), decided('s', true), decided('f', true), accepted('g', 'chat')];
    expect(fold(log).steers.map((s) => s.id)).toEqual(['s', 'f']);
    expect(waitingIds(fold([...log, ended('t1')]))).toEqual(['f', 's', 'g']);
  });
});
