import { randomUUID } from 'node:crypto';
import { Body, Controller, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { APPROVAL_ARGUMENTS_MAX, ApprovalBody, type ApprovalDecision, ApprovalDecisionAnswer, ApprovalId, type CompanionApproval } from '@rudder/contracts';
import type { InputOf, ReceiptAnswers, ReceiptRefusals } from '@rudder/conversation';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { isDotSegment } from '../../hostile-input/request-checks';
import { conversationKeyOf, parseEdge, requireJsonBody } from '../../http/edge';
import { json, key, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, type Write, Writes } from '../../writes/submit';

/**
 * The approval input kind as the gateway takes it, in one module: its route entries (`APPROVAL_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`APPROVAL`).
 */
export const APPROVAL_ROUTES = {
  decideApproval: route('post', '/v1/conversations/{key}/approvals/{approvalId}', 'Approve or deny a tool call waiting for approval', {
    description:
      "A call whose tool needs approval waits (its `approval.requested` event, the status's `awaiting`) and its turn parks until it is decided. `approve` runs it — with `arguments` (a JSON object its tool's schema must accept, else 422 `invalid_arguments`) when given, and its result tells the model so; `deny` gives it a result the model reads (`denied by the user: <reason>`). Needs write access. Final: the same decision (with the same arguments) again answers the same, any other 409; a call closed unrun by its turn's end is 409; an unknown approval 404.",
    requestParams: { path: z.object({ key, approvalId: ApprovalId }) },
    requestBody: { required: true, ...json(ApprovalBody.meta({ id: 'ApprovalBody' })) },
    responses: write(200, 'decided', ApprovalDecisionAnswer, ['conflict', 'not_found', 'invalid_arguments', 'text_too_long']),
  }),
} satisfies Routes;

export type ApprovalRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The `{approvalId}` of the path, unvalidated. */
  approvalId: string;
  /** The parsed JSON body, unvalidated. */
  body: unknown;
};

/**
 * `POST /v1/conversations/{key}/approvals/{approvalId}` `{decision, reason?, arguments?}`:
 * submits one decision (an input of its own, a fresh id) and answers 200 with the decision as
 * the worker stored it, under the conversation's lock. Decided once: a call decided before — by
 * a person, by its timeout — answers the same decision (and arguments) with that decision,
 * and any other with 409; a call its turn closed unrun (a stop) is 409 too; an approval nobody
 * knows is 404; edited arguments its tool's schema refuses are 422 `invalid_arguments`.
 *
 * What the read side already shows as decided is answered at once, nothing sent; an approval
 * it does not show yet (it lags the log) is asked of the worker, whose refusal (`not_awaiting`)
 * is then told apart by the read side, read at the refusal's position.
 */
@Injectable()
export class ApprovalHandler {
  private readonly write: Write<'approval', ApprovalDecision> = {
    known: async (input) => {
      const known = await this.companion.approval(input.conversation, input.approval);
      return known === null || known.state === 'awaiting' ? undefined : { answer: sameDecision(known, input) };
    },
    answered: (decision) => answerOf(decision),
    refused: (refusal, input) => this.refusal(refusal, input),
    // Whether it was decided shows in the status (`awaiting`) and the turn.
    late: (input, seconds) =>
      new GatewayError(
        'unavailable',
        `the decision ${input.id} on approval ${input.approval} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `read the conversation's status (awaiting) or the turn before sending it again`,
        { approvalId: input.approval },
      ),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async decide(request: ApprovalRequest): Promise<ApprovalDecision> {
    const approval = parseEdge(ApprovalId, request.approvalId, 'approval id');
    if (isDotSegment(approval)) throw new GatewayError('bad_request', 'bad approval id: it may not be or hold a "." or ".." segment');
    const body = parseEdge(ApprovalBody, request.body ?? {}, 'approval body');
    const edited = body.arguments === undefined ? undefined : canonicalJson(body.arguments);
    if (edited !== undefined && edited.length > APPROVAL_ARGUMENTS_MAX) {
      throw new GatewayError('text_too_long', `arguments have ${edited.length} characters as JSON; at most ${APPROVAL_ARGUMENTS_MAX} are accepted`, {
        path: 'arguments',
        length: edited.length,
        max: APPROVAL_ARGUMENTS_MAX,
      });
    }
    await this.access.mayWrite(request.key, request.subject);
    const input = inputRecord('approval', { id: randomUUID(), key: request.key, subject: request.subject }, {
      approval,
      decision: body.decision,
      ...(body.reason === undefined ? {} : { reason: body.reason }),
      ...(edited === undefined ? {} : { arguments: edited }),
    });
    return this.writes.submit(input, this.write);
  }

  /** The worker's refusal: 403, 422, or — no call waits under the approval — what the read side says became of it. */
  private async refusal({ code, message }: ReceiptRefusals['approval'], input: InputOf<'approval'>): Promise<GatewayError | ApprovalDecision> {
    if (code === 'forbidden') return new GatewayError('forbidden', `the worker refused the decision: ${message}`);
    if (code === 'invalid_arguments') return new GatewayError('invalid_arguments', message, { approvalId: input.approval });
    const known = await this.companion.approval(input.conversation, input.approval);
    if (known === null) return new GatewayError('not_found', `conversation ${input.conversation} has no approval ${input.approval}`, { approvalId: input.approval });
    if (known.state === 'awaiting') return new GatewayError('conflict', `approval ${input.approval} cannot be decided now: ${message}`, { approvalId: input.approval });
    try {
      return answerOf(sameDecision(known, input));
    } catch (error) {
      return error as GatewayError;
    }
  }
}

/** The decision a call has, when `input` asks for the same (same decision; for an approval, the same arguments); else 409 saying what it has. */
function sameDecision(known: CompanionApproval, input: InputOf<'approval'>): ReceiptAnswers['approval'] {
  const details = { approvalId: known.approvalId, state: known.state };
  if (known.state === 'closed') {
    throw new GatewayError('conflict', `approval ${known.approvalId} cannot be decided: its turn ended before anyone decided, and the call was closed unrun`, details);
  }
  const decision = known.state === 'approved' ? 'approve' : 'deny';
  const same = decision === input.decision && (decision === 'deny' || (known.editedArguments ?? null) === (input.arguments ?? null));
  if (!same) {
    const by = known.subject === null ? 'by its timeout' : `by ${known.subject}`;
    throw new GatewayError('conflict', `approval ${known.approvalId} was decided before (${decision} ${by}); a decision is final`, { ...details, decision });
  }
  const { approvalId: approval, turn, step, callId, tool, reason, editedArguments, subject } = known;
  return { approval, turn, step, callId, tool, decision, reason, arguments: editedArguments, subject };
}

const answerOf = ({ approval, turn, callId, tool, decision, reason, arguments: args, subject }: ReceiptAnswers['approval']): ApprovalDecision => ({
  approvalId: approval,
  turn,
  callId,
  tool,
  decision,
  reason,
  arguments: args,
  subject,
});

/** JSON with every object's keys in order: the same arguments are the same text, however a client ordered them. */
export function canonicalJson(value: unknown): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])]));
    return v;
  };
  return JSON.stringify(sorted(value));
}

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

/** The approval input kind: its routes, controller and handler, as one part of the gateway. */
export const APPROVAL: GatewayPart = { routes: APPROVAL_ROUTES, controllers: [ApprovalController], providers: [ApprovalHandler] };
