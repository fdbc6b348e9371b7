import { Body, Controller, Headers, Inject, Param, UseGuards } from '@nestjs/common';
import type { ChatAccepted } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { Route } from '../../http/route';
import { conversationKeyOf } from '../../http/edge';
import { ChatHandler } from './chat-handler';
import { CHAT_ROUTES } from './chat.routes';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class ChatController {
  constructor(@Inject(ChatHandler) private readonly handler: ChatHandler) {}

  /** 202 `{id, turn: null, position}`: the input is on agent.inputs and will be answered in order. */
  @Route(CHAT_ROUTES.chat)
  chat(
    @Param('key') key: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<ChatAccepted> {
    return this.handler.accept({ key: conversationKeyOf(key), subject, body, idempotencyKey });
  }
}
