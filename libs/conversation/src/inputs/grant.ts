import type { DomainEvent, EventDataOf } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import type { InputRules } from './rules';

/** The access the grantee has now (null once revoked). */
export type GrantAnswer = { subject: string; access: 'read' | 'write' | null };

/**
 * A grant: the owner gives another subject read or write access, or takes it back. Only the
 * owner grants, on an opened conversation, and never to itself: the owner reads and writes
 * always, so a grant to itself would list a grant that changes nothing.
 */
export const grantRules: InputRules<'grant', GrantAnswer, EventDataOf<'grant.refused'>['code']> = {
  decide: (state, input) => {
    const refused = (code: EventDataOf<'grant.refused'>['code']): DomainEvent[] => [{ type: 'grant.refused', data: { grant: input.id, subject: input.grantee, code } }];
    if (state.owner === null) return refused('not_found');
    if (input.subject !== state.owner) return refused('forbidden');
    if (input.grantee === state.owner) return refused('owner');
    return [{ type: 'access.granted', data: { grant: input.id, subject: input.grantee, access: input.access } }];
  },
  receiptKeys: (input) => [receiptKey.control('grant', input.id)],
  receipt: {
    'access.granted': { settles: true, read: (data) => ({ answer: { subject: data.subject, access: data.access } }) },
    'grant.refused': { settles: true, read: (data) => ({ refusal: data.code }) },
  },
  events: {
    'access.granted': {
      evolve: (state, data) => {
        const { [data.subject]: _previous, ...others } = state.grants;
        return { ...state, grants: data.access === null ? others : { ...others, [data.subject]: data.access } };
      },
      onceKey: (data) => receiptKey.control('grant', data.grant),
    },
    'grant.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('grant', data.grant) },
  },
};
