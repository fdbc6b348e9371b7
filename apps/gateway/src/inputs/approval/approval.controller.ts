import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import type { ApprovalDecision } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { Route } from '../../http/route';
import { conversationKeyOf, requireJsonBody } from '../../http/edge';
import { ApprovalHandler } from './approval-handler';
import { APPROVAL_ROUTES } from './approval.routes';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class ApprovalController {
  constructor(@Inject(ApprovalHandler) private readonly handler: ApprovalHandler) {}

  /** 200: the decision as the worker stored it. */
  @Route(APPROVAL_ROUTES.decideApproval)
  decide(@Param('key') key: string, @Param('approvalId') approvalId: string, @Body() body: unknown, @Subject() subject: string): Promise<ApprovalDecision> {
    requireJsonBody(body);
    return this.handler.decide({ key: conversationKeyOf(key), subject, approvalId, body });
  }
}
