import type { GatewayPart } from '../http/route';
import { PROTOCOL_ERRORS } from './protocol-errors';
import { ResponsesController } from './responses.controller';
import { ResponseReads } from './response-reads';
import { ResponseStreams } from './response-streams';
import { ResponsesHandler } from './responses-handler';
import { RESPONSES_ROUTES } from './responses.routes';

/** The OpenAI Responses protocol's door (docs/responses.md): its routes, and its errors in the protocol's shape. */
export const RESPONSES: GatewayPart = {
  routes: RESPONSES_ROUTES,
  controllers: [ResponsesController],
  providers: [ResponsesHandler, ResponseReads, ResponseStreams],
  errorShapes: [PROTOCOL_ERRORS],
};
