import { randomUUID } from 'node:crypto';
import { Body, Controller, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { InputId, type SteerAnswer, SteerDecisionAnswer } from '@rudder/contracts';
import type { InputOf, Outcome, ReceiptRefusals } from '@rudder/conversation';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient, type InputState } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { key, noBody, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, type Write, Writes } from '../../writes/submit';
import { notPending, targetRefused, type TargetWords } from '../target';

/**
 * The promote input kind as the gateway takes it, in one module: its route entries (`PROMOTE_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`PROMOTE`).
 */
export const PROMOTE_ROUTES = {
  promote: route('post', '/v1/conversations/{key}/inputs/{id}/promote', 'Turn a pending follow-up into a steer', {
    requestParams: { path: z.object({ key, id: InputId }) },
    requestBody: noBody,
    responses: write(200, 'the steer decision', SteerDecisionAnswer, ['conflict', 'not_found']),
  }),
} satisfies Routes;

/** How its answers speak of it (`target.ts`). */
const PROMOTION: TargetWords = { verb: 'promote', request: 'promotion', does: 'promotes', done: 'promoted' };

/** The promotion takes nothing but the path: `{}` or no body at all. */
const PromoteBody = z.object({}).strict();

export type PromoteRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Already validated (`InputId`): the pending follow-up to promote. */
  target: string;
  /** The parsed JSON body, unvalidated; undefined when the request had none (the same as `{}`). */
  body: unknown;
};

/**
 * `POST /v1/conversations/{key}/inputs/{id}/promote`: turns a pending follow-up into a steer
 * of the running turn. Submits one `PromoteInputV1` (a fresh id of its own) and answers the
 * worker's decision like a steer's: `steer.accepted` for that input → 200 `{id, turn, landed}`;
 * `promote.refused` → 409 `conflict` when the input is known but not a pending follow-up
 * (delivered, retracted, discarded, refused, or a steer), 404 `not_found` when nobody knows it.
 *
 * An input that already has a steer decision (promoted before, or sent as a steer) is
 * answered with it, nothing produced; so is one the companion shows as no longer pending (409).
 */
@Injectable()
export class PromoteHandler {
  private readonly write: Write<'promote', SteerAnswer> = {
    known: (input, seen) => this.known(input, seen),
    answered: ({ turn, landed }, input) => ({ id: input.target, turn, landed }),
    refused: (code, input) => this.refusal(input, code),
    // The status shows the input among the steers once it is one.
    late: ({ id, target }, seconds) =>
      new GatewayError(
        'unavailable',
        `the promotion ${id} of input ${target} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `send it again to get its answer (an input promoted already is answered with its decision)`,
        { promote: id, target },
      ),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async promote(request: PromoteRequest): Promise<SteerAnswer> {
    parseEdge(PromoteBody, request.body ?? {}, 'promote body');
    const { key, target } = request;
    await this.access.mayWrite(key, request.subject);
    return this.writes.submit(inputRecord('promote', { id: randomUUID(), key, subject: request.subject }, { target }), this.write);
  }

  /** The steer decision the input has already (decided in the last minute — a promotion retried, say — or in the companion's view), nothing sent. */
  private async known({ conversation, target }: InputOf<'promote'>, seen: Outcome<'promote'> | undefined): Promise<Outcome<'promote'> | 'sent' | undefined> {
    if (seen !== undefined && 'answer' in seen) return seen;
    const known = await this.companion.input(conversation, target);
    if (known === null) return undefined;
    if (known.steer) return { answer: { turn: known.steer.turn, landed: known.steer.landed } };
    // A steer whose decision is on its way: wait for it; promoting it would be refused.
    if (known.kind === 'steer') {
      if (known.state !== 'pending') throw isSteer(target, known.state);
      return 'sent';
    }
    if (known.state !== 'pending') throw notPending(PROMOTION, target, known.state);
    return undefined;
  }

  /** As a retraction's (`targetRefused`), but a target that was sent as a steer is 409 saying so. */
  private refusal({ conversation: key, target }: InputOf<'promote'>, code: ReceiptRefusals['promote']): Promise<GatewayError> {
    return targetRefused(this.companion, PROMOTION, key, target, code, (known) => (known.kind === 'steer' ? isSteer(target, known.state) : undefined));
  }
}

/** 409: only a follow-up can be promoted; a steer was answered (or refused) as one already. */
const isSteer = (id: string, state: InputState) =>
  new GatewayError('conflict', `input ${id} was sent as a steer; only a pending follow-up (a chat) can be promoted`, { id, state, kind: 'steer' });

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class PromoteController {
  constructor(@Inject(PromoteHandler) private readonly handler: PromoteHandler) {}

  /** 200 `{id, turn, landed}` once the worker has made the follow-up a steer; 409 once delivered, 404 when unknown. */
  @Route(PROMOTE_ROUTES.promote)
  promote(@Param('key') rawKey: string, @Param('id') rawId: string, @Body() body: unknown, @Subject() subject: string): Promise<SteerAnswer> {
    const key = conversationKeyOf(rawKey);
    const target = parseEdge(InputId, rawId, 'input id');
    return this.handler.promote({ key, subject, target, body });
  }
}

/** The promote input kind: its routes, controller and handler, as one part of the gateway. */
export const PROMOTE: GatewayPart = { routes: PROMOTE_ROUTES, controllers: [PromoteController], providers: [PromoteHandler] };
