import { z } from 'zod';
import { InputId, Subject } from '../conversation-key';
import { eventContract, namesAnswers } from '../event-parts';
import { envelope, inputKind } from './shared';

/** The owner gives `grantee` read or write access to the conversation, or (`access: null`) takes it back. */
export const GrantInputV1 = z.object({
  ...envelope,
  type: z.literal('grant'),
  grantee: Subject,
  access: z.enum(['read', 'write']).nullable(),
});
export type GrantInput = z.infer<typeof GrantInputV1>;

/** `PUT /v1/conversations/{key}/grants/{subject}` (`DELETE` revokes, with no body). */
export const GrantBody = z.object({ access: z.enum(['read', 'write']) }).strict();

export const GrantDecisionAnswer = z
  .object({ subject: z.string(), access: z.enum(['read', 'write']).nullable() })
  .meta({ id: 'GrantAnswer', description: 'The access `subject` has now; null once revoked.' });
/** A grant as decided: `access` null once revoked (`DELETE`). */
export type GrantAnswer = z.infer<typeof GrantDecisionAnswer>;

export const GRANT = inputKind({
  record: GrantInputV1,
  events: {
    /** The owner gave `subject` read or write access, or took it back (`access: null`). */
    'access.granted': eventContract(
      z.object({ grant: InputId, subject: Subject, access: z.enum(['read', 'write']).nullable() }),
      (data) => namesAnswers(data.grant),
    ),
    /**
     * A grant from someone other than the owner (`forbidden`), or for a conversation nobody
     * opened yet (`not_found`), or to the owner itself (`owner`: its access always is read and
     * write and never changes).
     */
    'grant.refused': eventContract(
      z.object({ grant: InputId, subject: Subject, code: z.enum(['forbidden', 'not_found', 'owner']) }),
      (data) => namesAnswers(data.grant),
    ),
  },
});
