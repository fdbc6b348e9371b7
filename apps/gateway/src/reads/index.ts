import type { GatewayPart } from '../http/route';
import { AffordancesController } from './affordances.controller';
import { MessagesController } from './messages.controller';
import { READ_ROUTES } from './reads.routes';
import { StatusController } from './status.controller';
import { TodosController } from './todos.controller';
import { TurnsController } from './turns.controller';

/**
 * The reads of a conversation through the companion (the read side): its status, transcript,
 * turns, plan, and the follow-ups and recap it makes. Each checks read access first
 * (`ConversationAccess.readable`).
 */
export const READS: GatewayPart = {
  routes: READ_ROUTES,
  controllers: [StatusController, MessagesController, TurnsController, AffordancesController, TodosController],
  providers: [],
};
