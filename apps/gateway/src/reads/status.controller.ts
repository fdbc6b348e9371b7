import { Controller, Inject, Param, UseGuards } from '@nestjs/common';
import type { ConversationStatus } from '@rudder/contracts';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { ConversationAccess } from '../companion/conversation-access';
import type { CompanionStatus } from '../companion/companion-client';
import { Route } from '../http/route';
import { READ_ROUTES } from './reads.routes';
import { conversationKeyOf } from '../http/edge';

@Controller()
@UseGuards(AuthGuard)
export class StatusController {
  constructor(@Inject(ConversationAccess) private readonly access: ConversationAccess) {}

  /** The companion's status without its internal fields; 404 for a key nobody owns. */
  @Route(READ_ROUTES.status)
  async status(@Param('key') rawKey: string, @Subject() subject: string): Promise<ConversationStatus> {
    const key = conversationKeyOf(rawKey);
    return publicStatus(await this.access.readable(key, subject), subject);
  }
}

/** Exactly the fields of `ConversationStatus`: `owner` stays inside; the grants are shown to the owner only. */
export function publicStatus(status: CompanionStatus, subject: string): ConversationStatus {
  const { key, running, steering, queue, lastInputId, agent, context, awaiting, heldUntil, position } = status;
  return { key, running, steering, queue, lastInputId, agent, context, awaiting, heldUntil, position, ...(status.owner === subject ? { grants: status.grants } : {}) };
}
