import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import type { StopAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { Route } from '../../http/route';
import { conversationKeyOf } from '../../http/edge';
import { StopHandler } from './stop-handler';
import { STOP_ROUTES } from './stop.routes';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class StopController {
  constructor(@Inject(StopHandler) private readonly handler: StopHandler) {}

  /** 202 `{turn}`: the turn the worker stopped (null when none ran, or the named one no longer runs). */
  @Route(STOP_ROUTES.stop)
  stop(@Param('key') key: string, @Body() body: unknown, @Subject() subject: string): Promise<StopAnswer> {
    return this.handler.stop({ key: conversationKeyOf(key), subject, body });
  }
}
