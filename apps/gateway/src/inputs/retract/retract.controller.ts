import { Controller, Inject, Param, Query, UseGuards } from '@nestjs/common';
import { InputId, MessageKind, type RetractAnswer } from '@rudder/contracts';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { Route } from '../../http/route';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { RetractHandler } from './retract-handler';
import { RETRACT_ROUTES } from './retract.routes';

/** `DELETE .../inputs?latest=chat|steer`: the one query there is, and it is needed. */
const LatestQuery = z.object({ latest: z.enum(MessageKind.options, 'latest is chat or steer') }).strict();
/** `DELETE .../inputs/{id}` takes no query. */
const NoQuery = z.object({}).strict();

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class RetractController {
  constructor(@Inject(RetractHandler) private readonly handler: RetractHandler) {}

  /** 200 `{id, text}`: the pending input taken back; 409 once delivered, 404 when unknown. */
  @Route(RETRACT_ROUTES.retract)
  byId(@Param('key') rawKey: string, @Param('id') rawId: string, @Query() query: unknown, @Subject() subject: string): Promise<RetractAnswer> {
    const key = conversationKeyOf(rawKey);
    const id = parseEdge(InputId, rawId, 'input id');
    parseEdge(NoQuery, query ?? {}, 'query');
    return this.handler.retract({ key, subject, target: { id } });
  }

  /** 200 `{id, text}`: the latest pending chat or steer taken back; 404 when none is pending. */
  @Route(RETRACT_ROUTES.retractLatest)
  latest(@Param('key') rawKey: string, @Query() query: unknown, @Subject() subject: string): Promise<RetractAnswer> {
    const key = conversationKeyOf(rawKey);
    const { latest } = parseEdge(LatestQuery, query ?? {}, 'query');
    return this.handler.retract({ key, subject, target: { latest } });
  }
}
