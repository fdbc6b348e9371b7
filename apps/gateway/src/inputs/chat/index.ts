import type { GatewayPart } from '../../http/route';
import { ChatController } from './chat.controller';
import { ChatHandler } from './chat-handler';
import { CHAT_ROUTES } from './chat.routes';

/** The chat input kind: its routes, controller and handler. */
export const CHAT: GatewayPart = { routes: CHAT_ROUTES, controllers: [ChatController], providers: [ChatHandler] };
