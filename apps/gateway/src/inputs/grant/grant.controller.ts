import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import type { GrantAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { Route } from '../../http/route';
import { conversationKeyOf } from '../../http/edge';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { GrantHandler } from './grant-handler';
import { GRANT_ROUTES } from './grant.routes';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class GrantController {
  constructor(@Inject(GrantHandler) private readonly handler: GrantHandler) {}

  /** 200 `{subject, access}` once the worker granted it; 403 for anyone but the owner. */
  @Route(GRANT_ROUTES.grant)
  grant(@Param('key') key: string, @Param('subject') grantee: string, @Body() body: unknown, @Subject() subject: string): Promise<GrantAnswer> {
    return this.handler.grant({ key: conversationKeyOf(key), subject, grantee, body });
  }

  /** 200 `{subject, access: null}` once the worker took the grant back; 403 for anyone but the owner. */
  @Route(GRANT_ROUTES.revoke)
  revoke(@Param('key') key: string, @Param('subject') grantee: string, @Subject() subject: string): Promise<GrantAnswer> {
    return this.handler.grant({ key: conversationKeyOf(key), subject, grantee, body: 'revoke' });
  }
}
