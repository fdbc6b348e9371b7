import { InputId, SteerDecisionAnswer } from '@rudder/contracts';
import { z } from 'zod';
import { key, noBody, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const PROMOTE_ROUTES = {
  promote: route('post', '/v1/conversations/{key}/inputs/{id}/promote', 'Turn a pending follow-up into a steer', {
    requestParams: { path: z.object({ key, id: InputId }) },
    requestBody: noBody,
    responses: write(200, 'the steer decision', SteerDecisionAnswer, ['conflict', 'not_found']),
  }),
} satisfies Routes;
