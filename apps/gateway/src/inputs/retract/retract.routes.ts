import { InputId, MessageKind, RetractedAnswer } from '@rudder/contracts';
import { z } from 'zod';
import { conversation, key, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const RETRACT_ROUTES = {
  retract: route('delete', '/v1/conversations/{key}/inputs/{id}', 'Retract a pending input', {
    requestParams: { path: z.object({ key, id: InputId }) },
    responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
  }),
  retractLatest: route('delete', '/v1/conversations/{key}/inputs', 'Retract the latest pending input of a queue', {
    requestParams: { path: conversation, query: z.object({ latest: MessageKind }) },
    responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
  }),
} satisfies Routes;
