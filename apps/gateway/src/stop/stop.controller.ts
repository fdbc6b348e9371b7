import { Body, Controller, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import type { StopAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { InputRateGuard } from '../limits/input-rate.guard';
import { conversationKeyOf } from '../edge';
import { StopHandler } from './stop-handler';

@Controller('v1/conversations/:key')
@UseGuards(AuthGuard, InputRateGuard)
export class StopController {
  constructor(@Inject(StopHandler) private readonly handler: StopHandler) {}

  /** 202 `{turn}`: the turn the worker stopped (null when none ran, or the named one no longer runs). */
  @Post('stop')
  @HttpCode(202)
  stop(@Param('key') key: string, @Body() body: unknown, @Subject() subject: string): Promise<StopAnswer> {
    return this.handler.stop({ key: conversationKeyOf(key), subject, body });
  }
}
