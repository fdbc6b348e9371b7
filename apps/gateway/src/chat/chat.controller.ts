import { Body, Controller, Headers, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import type { ChatAccepted } from '@rudder/contracts';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { InputRateGuard } from '../limits/input-rate.guard';
import { conversationKeyOf } from '../edge';
import { ChatHandler } from './chat-handler';

@Controller('v1/conversations/:key')
@UseGuards(AuthGuard, InputRateGuard)
export class ChatController {
  constructor(@Inject(ChatHandler) private readonly handler: ChatHandler) {}

  /** 202 `{id, turn: null, position}`: the input is on agent.inputs and will be answered in order. */
  @Post('chat')
  @HttpCode(202)
  chat(
    @Param('key') key: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<ChatAccepted> {
    return this.handler.accept({ key: conversationKeyOf(key), subject, body, idempotencyKey });
  }
}
