import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import { InputId, type SteerAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { Route } from '../../http/route';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { PromoteHandler } from './promote-handler';
import { PROMOTE_ROUTES } from './promote.routes';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class PromoteController {
  constructor(@Inject(PromoteHandler) private readonly handler: PromoteHandler) {}

  /** 200 `{id, turn, landed}` once the worker has made the follow-up a steer; 409 once delivered, 404 when unknown. */
  @Route(PROMOTE_ROUTES.promote)
  promote(@Param('key') rawKey: string, @Param('id') rawId: string, @Body() body: unknown, @Subject() subject: string): Promise<SteerAnswer> {
    const key = conversationKeyOf(rawKey);
    const target = parseEdge(InputId, rawId, 'input id');
    return this.handler.promote({ key, subject, target, body });
  }
}
