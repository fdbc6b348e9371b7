import { ChatAcceptedAnswer, ChatBody } from '@rudder/contracts';
import { conversation, idempotencyHeaders, json, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const CHAT_ROUTES = {
  chat: route('post', '/v1/conversations/{key}/chat', 'Enqueue a follow-up (`text`, or `messages` answered by one reply)', {
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(ChatBody.meta({ id: 'ChatBody' })) },
    responses: write(202, 'accepted by the worker', ChatAcceptedAnswer, [
      'unknown_agent',
      'conflict',
      'agent_mismatch',
      'precondition_failed',
      'text_too_long',
      'id_reused',
      'refused',
      'queue_full',
      'guard_failed',
    ]),
  }),
} satisfies Routes;
