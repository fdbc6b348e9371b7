import { Controller, Inject, Param, Query, UseGuards } from '@nestjs/common';
import { FOLLOWUPS_DEFAULT, FOLLOWUPS_MAX, type Followups, type Recap } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import { z } from 'zod';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { Route } from '../http/route';
import { READ_ROUTES } from './reads.routes';
import { conversationKeyOf, parseEdge } from '../http/edge';
import { GatewayMetrics } from '../http/gateway-metrics';
import { LOG } from '../tokens';

/** `n`: how many suggestions, 1 to FOLLOWUPS_MAX (FOLLOWUPS_DEFAULT when absent); anything else is 400. */
const FollowupsQuery = z.object({
  n: z
    .string()
    .regex(/^\d{1,2}$/, 'n is a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1, 'n is at least 1').max(FOLLOWUPS_MAX, `n is at most ${FOLLOWUPS_MAX}`))
    .default(FOLLOWUPS_DEFAULT),
});

/**
 * Follow-up suggestions and the recap: made by the companion, outside every turn. Reading
 * them needs `read`, like the transcript (404 for a key nobody owns, 403 without read). Past
 * that check they are never an error: what the companion cannot answer (it is down, behind, or
 * answers something unreadable) is answered empty, logged and counted, like what it fails to make.
 */
@Controller()
@UseGuards(AuthGuard)
export class AffordancesController {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(LOG) private readonly log: Log,
  ) {}

  @Route(READ_ROUTES.followups)
  async followups(@Param('key') rawKey: string, @Query() rawQuery: unknown, @Subject() subject: string): Promise<Followups> {
    const key = conversationKeyOf(rawKey);
    const { n } = parseEdge(FollowupsQuery, rawQuery, 'query');
    await this.access.readable(key, subject);
    return this.companion.followups(key, n).catch((error: unknown) => this.unanswered(key, 'followups', error, { suggestions: [] }));
  }

  @Route(READ_ROUTES.recap)
  async recap(@Param('key') rawKey: string, @Subject() subject: string): Promise<Recap> {
    const key = conversationKeyOf(rawKey);
    await this.access.readable(key, subject);
    return this.companion.recap(key).catch((error: unknown) => this.unanswered(key, 'recap', error, { recap: '' }));
  }

  private unanswered<T>(key: string, kind: 'followups' | 'recap', error: unknown, empty: T): T {
    this.log.warn(`the companion did not answer ${kind}; answered empty`, { conversation: key, error: error instanceof Error ? error.message : String(error) });
    this.metrics.affordanceUnanswered(kind);
    return empty;
  }
}
