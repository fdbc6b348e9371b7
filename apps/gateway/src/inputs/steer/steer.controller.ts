import { Body, Controller, Headers, Inject, Param, UseGuards } from '@nestjs/common';
import type { SteerAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { Route } from '../../http/route';
import { conversationKeyOf } from '../../http/edge';
import { SteerHandler } from './steer-handler';
import { STEER_ROUTES } from './steer.routes';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class SteerController {
  constructor(@Inject(SteerHandler) private readonly handler: SteerHandler) {}

  /** 200 `{id, turn, landed}` once the worker has decided where the message goes. */
  @Route(STEER_ROUTES.steer)
  steer(
    @Param('key') key: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<SteerAnswer> {
    return this.handler.steer({ key: conversationKeyOf(key), subject, body, idempotencyKey });
  }
}
