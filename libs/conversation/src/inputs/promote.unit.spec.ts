import { describe, expect, it } from 'vitest';
import { chat, decisions, deciderSpec, IDLE, promote, RUNNING } from '../testing/decider-spec';

const { given } = deciderSpec();

describe('a promotion under the conversation lock', () => {
  it('promote turns a pending follow-up into a steer of the running turn, and refuses anything else', () => {
    const head = given(RUNNING).and(chat('f'));
    const promoted = head.when(promote('pr', 'f'));
    expect(decisions(promoted.events)).toEqual([['f', 't1', true]]);
    expect(promoted.state.steers.map((s) => s.id)).toEqual(['f']);
    expect(promoted.state.queue).toEqual([]);
    head.when(promote('pr2', 'nope')).then([{ type: 'promote.refused', data: { promote: 'pr2', target: 'nope', code: 'not_found' } }]);
    expect(decisions(given(IDLE).and(chat('f')).when(promote('pr3', 'f')).events)).toEqual([['f', null, false]]);
  });

  it('a promotion from a subject that may not write promotes nothing', () => {
    given(RUNNING).and(chat('f')).when({ ...promote('pr', 'f'), subject: 'mallory' }).thenRefused('forbidden');
  });

  it('promotes the follow-up it names, not another waiting', () => {
    const promoted = given(RUNNING).and(chat('f'), chat('g')).when(promote('pr', 'g'));
    expect(promoted.state.steers.map((s) => s.id)).toEqual(['g']);
    expect(promoted.state.queue.map((s) => s.id)).toEqual(['f']);
  });
});
