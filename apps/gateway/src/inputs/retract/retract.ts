import { randomUUID } from 'node:crypto';
import { Controller, Inject, Injectable, Param, Query, UseGuards } from '@nestjs/common';
import { InputId, MessageKind, type RetractAnswer, RetractedAnswer } from '@rudder/contracts';
import type { InputOf } from '@rudder/conversation';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { conversation, key, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, type Write, Writes } from '../../writes/submit';
import { notPending, targetRefused, type TargetWords } from '../target';

/**
 * The retract input kind as the gateway takes it, in one module: its route entries (`RETRACT_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`RETRACT`).
 */
export const RETRACT_ROUTES = {
  retract: route('delete', '/v1/conversations/{key}/inputs/{id}', 'Retract a pending input', {
    requestParams: { path: z.object({ key, id: InputId }) },
    responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
  }),
  retractLatest: route('delete', '/v1/conversations/{key}/inputs', 'Retract the latest pending input of a queue', {
    requestParams: { path: conversation, query: z.object({ latest: MessageKind }) },
    responses: write(200, 'taken back', RetractedAnswer, ['conflict', 'not_found']),
  }),
} satisfies Routes;

/** How its answers speak of it (`target.ts`). */
const RETRACTION: TargetWords = { verb: 'retract', request: 'retraction', does: 'retracts', done: 'retracted' };

/** What to take back: an input by id, or the latest pending one of a queue. */
export type RetractTarget = InputOf<'retract'>['target'];

export type RetractRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Already validated. */
  target: RetractTarget;
};

/**
 * `DELETE /v1/conversations/{key}/inputs/{id}` and `DELETE .../inputs?latest=chat|steer`:
 * submits one `RetractInputV1` (a fresh id of its own) and answers the worker's decision on
 * it, made under the conversation's lock so it is serialized with the turn that would take
 * the input: `input.retracted` → 200 `{id, text}` of the input taken back; `retract.refused`
 * → 409 `conflict` when the input is known but no longer pending (delivered, retracted,
 * discarded, refused), 404 `not_found` when nobody knows it (or, with `latest`, nothing of
 * that kind is pending).
 *
 * An input the companion already shows as no longer pending is 409 at once, nothing produced
 * (those states are final). One it does not know yet may be a moment old (the companion lags
 * `agent.inputs`), so the worker is asked.
 */
@Injectable()
export class RetractHandler {
  private readonly write: Write<'retract', RetractAnswer> = {
    known: async ({ conversation, target }) => {
      if (!('id' in target)) return undefined;
      const known = await this.companion.input(conversation, target.id);
      if (known !== null && known.state !== 'pending') throw notPending(RETRACTION, target.id, known.state);
      return undefined;
    },
    answered: (retracted) => retracted,
    refused: (code, { conversation, target }) => targetRefused(this.companion, RETRACTION, conversation, 'id' in target ? target.id : target, code),
    // Whether it took the input back shows in the status.
    late: ({ id, target }, seconds) =>
      new GatewayError(
        'unavailable',
        `the retraction ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `read the conversation's status before sending it again (the input is gone from it once retracted)`,
        { retract: id, target },
      ),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async retract(request: RetractRequest): Promise<RetractAnswer> {
    const { key, target } = request;
    await this.access.mayWrite(key, request.subject);
    return this.writes.submit(inputRecord('retract', { id: randomUUID(), key, subject: request.subject }, { target }), this.write);
  }
}

/** `DELETE .../inputs?latest=chat|steer`: the one query there is, and it is needed. */
const LatestQuery = z.object({ latest: z.enum(MessageKind.options, 'latest is chat or steer') }).strict();
/** `DELETE .../inputs/{id}` takes no query. */
const NoQuery = z.object({}).strict();

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class RetractController {
  constructor(@Inject(RetractHandler) private readonly handler: RetractHandler) {}

  /** 200 `{id, text}`: the pending input taken back; 409 once delivered, 404 when unknown. */
  @Route(RETRACT_ROUTES.retract)
  byId(@Param('key') rawKey: string, @Param('id') rawId: string, @Query() query: unknown, @Subject() subject: string): Promise<RetractAnswer> {
    const key = conversationKeyOf(rawKey);
    const id = parseEdge(InputId, rawId, 'input id');
    parseEdge(NoQuery, query ?? {}, 'query');
    return this.handler.retract({ key, subject, target: { id } });
  }

  /** 200 `{id, text}`: the latest pending chat or steer taken back; 404 when none is pending. */
  @Route(RETRACT_ROUTES.retractLatest)
  latest(@Param('key') rawKey: string, @Query() query: unknown, @Subject() subject: string): Promise<RetractAnswer> {
    const key = conversationKeyOf(rawKey);
    const { latest } = parseEdge(LatestQuery, query ?? {}, 'query');
    return this.handler.retract({ key, subject, target: { latest } });
  }
}

/** The retract input kind: its routes, controller and handler, as one part of the gateway. */
export const RETRACT: GatewayPart = { routes: RETRACT_ROUTES, controllers: [RetractController], providers: [RetractHandler] };
