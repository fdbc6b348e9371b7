import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import type { Followups, Recap } from '@rudder/contracts';
import { conversationKey, followupsQuery } from '../http/params';
import { AffordanceMaker } from './affordance-maker';

/**
 * Follow-up suggestions and the recap, for the gateway (which checked `read` first). Both
 * answer 200 whatever happens to their model request: empty when it failed (see `AffordanceMaker`).
 */
@Controller()
export class AffordancesController {
  constructor(@Inject(AffordanceMaker) private readonly maker: AffordanceMaker) {}

  @Get('conversations/:key/followups')
  followups(@Param('key') key: string, @Query() query: unknown): Promise<Followups> {
    const conversation = conversationKey(key);
    const { n } = followupsQuery(query);
    return this.maker.followups(conversation, n);
  }

  @Get('conversations/:key/recap')
  recap(@Param('key') key: string): Promise<Recap> {
    return this.maker.recap(conversationKey(key));
  }
}
