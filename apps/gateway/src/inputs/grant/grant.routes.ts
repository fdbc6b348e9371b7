import { GrantBody, GrantDecisionAnswer, Subject } from '@rudder/contracts';
import { z } from 'zod';
import { json, key, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const GRANT_ROUTES = {
  grant: route('put', '/v1/conversations/{key}/grants/{subject}', 'The owner grants a subject read or write access', {
    requestParams: { path: z.object({ key, subject: Subject }) },
    requestBody: { required: true, ...json(GrantBody.meta({ id: 'GrantBody' })) },
    responses: write(200, 'granted', GrantDecisionAnswer, ['not_found', 'conflict']),
  }),
  revoke: route('delete', '/v1/conversations/{key}/grants/{subject}', 'The owner revokes a grant', {
    requestParams: { path: z.object({ key, subject: Subject }) },
    responses: write(200, 'revoked (`access: null`)', GrantDecisionAnswer, ['not_found', 'conflict']),
  }),
} satisfies Routes;
