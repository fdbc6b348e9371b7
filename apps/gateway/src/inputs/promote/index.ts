import type { GatewayPart } from '../../http/route';
import { PromoteController } from './promote.controller';
import { PromoteHandler } from './promote-handler';
import { PROMOTE_ROUTES } from './promote.routes';

/** The promote input kind: its routes, controller and handler. */
export const PROMOTE: GatewayPart = { routes: PROMOTE_ROUTES, controllers: [PromoteController], providers: [PromoteHandler] };
