import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import { Route } from '../routes';
import type { GrantAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { conversationKeyOf } from '../http/edge';
import { InputRateGuard } from '../limits/input-rate.guard';
import { GrantsHandler } from './grants-handler';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class GrantsController {
  constructor(@Inject(GrantsHandler) private readonly handler: GrantsHandler) {}

  /** 200 `{subject, access}` once the worker granted it; 403 for anyone but the owner. */
  @Route('grant')
  grant(@Param('key') key: string, @Param('subject') grantee: string, @Body() body: unknown, @Subject() subject: string): Promise<GrantAnswer> {
    return this.handler.grant({ key: conversationKeyOf(key), subject, grantee, body });
  }

  /** 200 `{subject, access: null}` once the worker took the grant back; 403 for anyone but the owner. */
  @Route('revoke')
  revoke(@Param('key') key: string, @Param('subject') grantee: string, @Subject() subject: string): Promise<GrantAnswer> {
    return this.handler.grant({ key: conversationKeyOf(key), subject, grantee, body: 'revoke' });
  }
}
