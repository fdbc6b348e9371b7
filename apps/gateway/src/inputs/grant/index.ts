import type { GatewayPart } from '../../http/route';
import { GrantController } from './grant.controller';
import { GrantHandler } from './grant-handler';
import { GRANT_ROUTES } from './grant.routes';

/** The grant input kind: its routes, controller and handler. */
export const GRANT: GatewayPart = { routes: GRANT_ROUTES, controllers: [GrantController], providers: [GrantHandler] };
