import { describe, expect, it } from 'vitest';
import { base, chat, deciderSpec, retract, RUNNING, steer } from '../testing/decider-spec';

const { given } = deciderSpec();

describe('a retraction under the conversation lock', () => {
  it('retract takes back a pending input by id or the latest of a queue, and refuses what is not pending', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'), steer('s'));
    head.when(retract('r1', { id: 'a' })).then([{ type: 'input.retracted', data: { input: { id: 'a', kind: 'chat', text: 'a' }, retract: 'r1' } }]);
    expect(head.when(retract('r2', { latest: 'chat' })).events[0]).toMatchObject({ data: { input: { id: 'b' } } });
    expect(head.when(retract('r3', { latest: 'steer' })).events[0]).toMatchObject({ data: { input: { id: 's' } } });
    head.when(retract('r4', { id: 'p0' })).then([{ type: 'retract.refused', data: { retract: 'r4', target: 'p0', code: 'not_found' } }]);
    expect(head.when(retract('r1', { id: 'a' })).state.queue.map((q) => q.id)).toEqual(['b']);
  });

  it('a retraction from a subject that may not write takes nothing back', () => {
    given(RUNNING).and(chat('a')).when({ ...retract('r', { id: 'a' }), subject: 'mallory' }).thenRefused('forbidden');
  });

  it('the latest of a queue is the one accepted last, wherever a move put it', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'), { ...base, type: 'move', id: 'm', target: 'b', before: 'a' });
    expect(head.state.queue.map((q) => q.id)).toEqual(['b', 'a']);
    expect(head.when(retract('r1', { latest: 'chat' })).events[0]).toMatchObject({ data: { input: { id: 'b' } } });
  });
});
