import type { GatewayPart } from '../../http/route';
import { SteerController } from './steer.controller';
import { SteerHandler } from './steer-handler';
import { STEER_ROUTES } from './steer.routes';

/** The steer input kind: its routes, controller and handler. */
export const STEER: GatewayPart = { routes: STEER_ROUTES, controllers: [SteerController], providers: [SteerHandler] };
