import { describe, expect, it } from 'vitest';
import type { InputRecord } from '@rudder/contracts';
import { base, deciderSpec, IDLE } from '../testing/decider-spec';

const { given } = deciderSpec();

describe('who may grant, decided with the grant', () => {
  const grant = (id: string, subject: string, grantee: string, access: 'read' | 'write' | null = 'read'): InputRecord => ({ ...base, type: 'grant', id, subject, grantee, access });

  it('only the owner grants, on an opened conversation, and never to itself', () => {
    given([]).when(grant('g0', 'alice', 'bob')).then([{ type: 'grant.refused', data: { grant: 'g0', subject: 'bob', code: 'not_found' } }]);
    const { events, state } = given(IDLE).when(grant('g1', 'alice', 'bob'), grant('g2', 'bob', 'carol'), grant('g3', 'alice', 'alice'), grant('g4', 'alice', 'alice', null));
    expect(events.map((e) => (e.type === 'grant.refused' ? [e.data.grant, e.data.code] : [e.type]))).toEqual([['access.granted'], ['g2', 'forbidden'], ['g3', 'owner'], ['g4', 'owner']]);
    expect(state.grants).toEqual({ bob: 'read' });
  });

  it('a grant of no access takes back what the subject had; the others keep theirs', () => {
    const { state } = given(IDLE).and(grant('g1', 'alice', 'bob'), grant('g2', 'alice', 'carol', 'write')).when(grant('g3', 'alice', 'bob', null));
    expect(state.grants).toEqual({ carol: 'write' });
  });
});
