import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { type SteerAnswer, SteerBody, SteerDecisionAnswer } from '@rudder/contracts';
import { type Outcome, sameInput } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient, type CompanionInput } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf } from '../../http/edge';
import { conversation, idempotencyHeaders, json, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { CONFIG } from '../../tokens';
import { Decisions } from '../../writes/decisions';
import { inputRecord, type Write, Writes } from '../../writes/submit';
import { admitMessage, messageAnswers, type MessageBody, type MessageRequest } from '../message';

/**
 * The steer input kind as the gateway takes it, in one module: its route entries (`STEER_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`STEER`).
 */
export const STEER_ROUTES = {
  steer: route('post', '/v1/conversations/{key}/steer', 'Steer the running turn', {
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(SteerBody.meta({ id: 'SteerBody' })) },
    responses: write(200, 'the worker decided where the message goes', SteerDecisionAnswer, [
      'precondition_failed',
      'text_too_long',
      'id_reused',
      'refused',
      'queue_full',
      'guard_failed',
    ]),
  }),
} satisfies Routes;

const STEER_BODY: MessageBody<SteerBody> = { schema: SteerBody, what: 'steer body', texts: (body) => [['text', body.text]] };

/**
 * `POST /v1/conversations/{key}/steer`: validates the message like a chat and submits it
 * (`Writes.submit`), answering the worker's decision on it (the steer's receipt:
 * `steer.accepted`, the turn that will take it and whether it lands there; `input.rejected`:
 * 412/429). Every check that can refuse the request (400/413, 401/403, a reused id) runs
 * before the one produce. The log may hold another input under the id (a chat, or a steer
 * with other text, sent before the companion showed it): that is no answer to this steer, and
 * the id is reused (422), as it is once the companion shows the first input.
 */
@Injectable()
export class SteerHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
    @Inject(Decisions) private readonly decisions: Decisions,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async steer(request: MessageRequest): Promise<SteerAnswer> {
    const { body, sender, idFromClient } = await admitMessage(request, STEER_BODY, this.config.MAX_TEXT_CHARS, this.access);
    const input = inputRecord('steer', sender, {
      text: body.text,
      ...(body.ifLastInputId === undefined ? {} : { ifLastInputId: body.ifLastInputId }),
    });
    return this.writes.submit(input, this.write(idFromClient));
  }

  /** How a steer is submitted (`Writes.submit`); other doors submit their steers with it (`Inputs.message`). */
  write(idFromClient: boolean): Write<'steer', SteerAnswer> {
    return {
      ...messageAnswers('steer', this.decisions),
      // A new id (ours, or one the companion has not seen) is produced; the worker dedupes
      // ids, so a retry racing the companion's lag is still answered once.
      known: async (input) => {
        const earlier = idFromClient ? await this.companion.input(input.conversation, input.id) : null;
        if (earlier === null) return undefined;
        if (!sameInput(earlier, input)) throw reused(input.id, earlier.kind);
        // The same steer again: the worker has it, so nothing is produced; its decision is
        // stored, or on its way.
        return known(earlier);
      },
      answered: (answer, input) => ({ id: input.id, turn: answer.turn, landed: answer.landed }),
      reused: (input) => reused(input.id),
    };
  }
}

/** The decision on a steer the companion knows, if it has one (its input view's `steer`, or its `rejection`); else it is on its way. */
function known(earlier: CompanionInput): Outcome<'steer'> | 'sent' {
  if (earlier.state === 'rejected' && earlier.rejection) return { refusal: earlier.rejection };
  if (earlier.steer) return { answer: { turn: earlier.steer.turn, landed: earlier.steer.landed } };
  return 'sent';
}

const reused = (id: string, kind?: string) => new GatewayError('id_reused', `input ${id} was sent before as another ${kind ?? 'input'} or with other text; use a new id`);

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class SteerController {
  constructor(@Inject(SteerHandler) private readonly handler: SteerHandler) {}

  /** 200 `{id, turn, landed}` once the worker has decided where the message goes. */
  @Route(STEER_ROUTES.steer)
  steer(
    @Param('key') key: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<SteerAnswer> {
    return this.handler.steer({ key: conversationKeyOf(key), subject, body, idempotencyKey });
  }
}

/** The steer input kind: its routes, controller and handler, as one part of the gateway. */
export const STEER: GatewayPart = { routes: STEER_ROUTES, controllers: [SteerController], providers: [SteerHandler] };
