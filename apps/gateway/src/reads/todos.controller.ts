import { Controller, Inject, Param, UseGuards } from '@nestjs/common';
import type { Todos } from '@rudder/contracts';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { ConversationAccess } from '../companion/conversation-access';
import { Route } from '../http/route';
import { READ_ROUTES } from './reads.routes';
import { conversationKeyOf } from '../http/edge';

/**
 * The agent's plan: read from the companion's status, which folds `todos.updated` with
 * the rest of the conversation's state, so the list, the access check and `position` are of one
 * moment. Needs `read`, like the transcript (404 for a key nobody owns).
 */
@Controller()
@UseGuards(AuthGuard)
export class TodosController {
  constructor(@Inject(ConversationAccess) private readonly access: ConversationAccess) {}

  @Route(READ_ROUTES.todos)
  async todos(@Param('key') rawKey: string, @Subject() subject: string): Promise<Todos> {
    const status = await this.access.readable(conversationKeyOf(rawKey), subject);
    return { items: status.todos, position: status.position };
  }
}
