import type { GatewayPart } from '../../http/route';
import { StopController } from './stop.controller';
import { StopHandler } from './stop-handler';
import { STOP_ROUTES } from './stop.routes';

/** The stop input kind: its routes, controller and handler. */
export const STOP: GatewayPart = { routes: STOP_ROUTES, controllers: [StopController], providers: [StopHandler] };
