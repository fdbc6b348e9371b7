import { SteerBody, SteerDecisionAnswer } from '@rudder/contracts';
import { conversation, idempotencyHeaders, json, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const STEER_ROUTES = {
  steer: route('post', '/v1/conversations/{key}/steer', 'Steer the running turn', {
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(SteerBody.meta({ id: 'SteerBody' })) },
    responses: write(200, 'the worker decided where the message goes', SteerDecisionAnswer, [
      'precondition_failed',
      'text_too_long',
      'id_reused',
      'refused',
      'queue_full',
      'guard_failed',
    ]),
  }),
} satisfies Routes;
