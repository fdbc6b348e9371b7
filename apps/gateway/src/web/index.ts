import type { GatewayPart } from '../http/route';
import { WebController } from './web.controller';
import { WEB_ROUTES } from './web.routes';

/** The web chat at `GET /`: a page and its script (the browser code in browser/). */
export const WEB: GatewayPart = { routes: WEB_ROUTES, controllers: [WebController], providers: [] };
