import type { GatewayPart } from '../../http/route';
import { RetractController } from './retract.controller';
import { RetractHandler } from './retract-handler';
import { RETRACT_ROUTES } from './retract.routes';

/** The retract input kind: its routes, controller and handler. */
export const RETRACT: GatewayPart = { routes: RETRACT_ROUTES, controllers: [RetractController], providers: [RetractHandler] };
