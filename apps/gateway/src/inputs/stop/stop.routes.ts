import { StopBody, StopDecisionAnswer } from '@rudder/contracts';
import { conversation, json, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const STOP_ROUTES = {
  stop: route('post', '/v1/conversations/{key}/stop', 'Stop the running turn (that turn only, when `turn` is named); `graceful: true` asks it to wind down', {
    requestParams: { path: conversation },
    requestBody: { required: false, ...json(StopBody.meta({ id: 'StopBody' })) },
    responses: write(202, 'the worker decided', StopDecisionAnswer, []),
  }),
} satisfies Routes;
