import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import type { ApprovalDecision } from '@rudder/contracts';
import { Route } from '../routes';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { InputRateGuard } from '../limits/input-rate.guard';
import { conversationKeyOf, requireJsonBody } from '../http/edge';
import { ApprovalsHandler } from './approvals-handler';

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class ApprovalsController {
  constructor(@Inject(ApprovalsHandler) private readonly handler: ApprovalsHandler) {}

  /** 200: the decision as the worker stored it. */
  @Route('decideApproval')
  decide(@Param('key') key: string, @Param('approvalId') approvalId: string, @Body() body: unknown, @Subject() subject: string): Promise<ApprovalDecision> {
    requireJsonBody(body);
    return this.handler.decide({ key: conversationKeyOf(key), subject, approvalId, body });
  }
}
