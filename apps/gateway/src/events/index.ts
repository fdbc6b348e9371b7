import type { GatewayPart } from '../http/route';
import { EventsController } from './events.controller';
import { EventsHandler } from './events-handler';
import { EVENT_ROUTES } from './events.routes';
import { StreamBuffers } from './stream-buffers';
import { StreamTokensController } from './stream-tokens.controller';

/** A conversation's event stream (SSE, `EventStream`), and the stream tokens that open it from a browser. */
export const EVENTS: GatewayPart = {
  routes: EVENT_ROUTES,
  controllers: [EventsController, StreamTokensController],
  providers: [EventsHandler, StreamBuffers],
};
