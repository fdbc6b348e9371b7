import { ApprovalBody, ApprovalDecisionAnswer, ApprovalId } from '@rudder/contracts';
import { z } from 'zod';
import { json, key, write } from '../../http/openapi';
import { route, type Routes } from '../../http/route';

export const APPROVAL_ROUTES = {
  decideApproval: route('post', '/v1/conversations/{key}/approvals/{approvalId}', 'Approve or deny a tool call waiting for approval', {
    description:
      "A call whose tool needs approval waits (its `approval.requested` event, the status's `awaiting`) and its turn parks until it is decided. `approve` runs it — with `arguments` (a JSON object its tool's schema must accept, else 422 `invalid_arguments`) when given, and its result tells the model so; `deny` gives it a result the model reads (`denied by the user: <reason>`). Needs write access. Final: the same decision (with the same arguments) again answers the same, any other 409; a call closed unrun by its turn's end is 409; an unknown approval 404.",
    requestParams: { path: z.object({ key, approvalId: ApprovalId }) },
    requestBody: { required: true, ...json(ApprovalBody.meta({ id: 'ApprovalBody' })) },
    responses: write(200, 'decided', ApprovalDecisionAnswer, ['conflict', 'not_found', 'invalid_arguments', 'text_too_long']),
  }),
} satisfies Routes;
