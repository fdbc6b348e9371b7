import { Controller, Inject, Param, Query, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { Route } from '../http/route';
import { READ_ROUTES } from './reads.routes';
import { conversationKeyOf, parseEdge } from '../http/edge';

/** `after` is the opaque `next` cursor of the previous page; `limit` is 1-200 (the companion's bound and default); `include=rolledBack` shows the rolled-back turns' rows. */
const MessagesQuery = z.object({
  after: z.string().min(1).max(500).optional(),
  limit: z
    .string()
    .regex(/^\d+$/, 'limit is a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1, 'limit is at least 1').max(200, 'limit is at most 200'))
    .optional(),
  /** `rolledBack`: the rows of rolled-back turns too, marked so. */
  include: z.literal('rolledBack', { error: 'include may only be rolledBack' }).optional(),
});

@Controller()
@UseGuards(AuthGuard)
export class MessagesController {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
  ) {}

  /** The transcript, oldest first: `{items, next}` as the companion answers it. */
  @Route(READ_ROUTES.messages)
  async messages(
    @Param('key') rawKey: string,
    @Query() rawQuery: unknown,
    @Subject() subject: string,
  ): Promise<unknown> {
    const key = conversationKeyOf(rawKey);
    const query = parseEdge(MessagesQuery, rawQuery, 'query');
    await this.access.readable(key, subject);
    return this.companion.messages(key, query);
  }
}
