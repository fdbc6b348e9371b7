import { describe, expect, it } from 'vitest';
import { agentsWith, decisions, deciderSpec, IDLE, policy, RUNNING, steer } from '../testing/decider-spec';

const { given } = deciderSpec();

describe('deciding a steer under the conversation lock', () => {
  it('a steer sent while a turn runs lands on that turn', () => {
    expect(decisions(given(RUNNING).when(steer('s')).events)).toEqual([['s', 't1', true]]);
  });

  it('a steer sent when no turn runs does not land: it waits as a turn of its own', () => {
    const { events, state } = given(IDLE).when(steer('s'));
    expect(decisions(events)).toEqual([['s', null, false]]);
    expect(state.queue.map((q) => [q.id, q.kind])).toEqual([['s', 'steer']]);
  });

  it('past the cap, and to an agent whose turns take none, a steer does not land', () => {
    const capped = deciderSpec(agentsWith({ ...policy, maxTaken: 1 }));
    expect(decisions(capped.given(RUNNING).when(steer('a'), steer('b')).events)).toEqual([
      ['a', 't1', true],
      ['b', null, false],
    ]);
    const none = deciderSpec(agentsWith({ ...policy, maxTaken: 0 }));
    expect(decisions(none.given(RUNNING).when(steer('a')).events)).toEqual([['a', null, false]]);
  });

  it('a steer that lands has no place in the queue', () => {
    const accepted = given(RUNNING).when(steer('s')).events.find((e) => e.type === 'input.accepted');
    expect(accepted?.data).not.toHaveProperty('ahead');
  });
});
