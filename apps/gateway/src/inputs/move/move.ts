import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { InputId, MoveBody, MovedAnswer, type MoveAnswer } from '@rudder/contracts';
import type { InputOf, MoveRefusal } from '@rudder/conversation';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { isDotSegment } from '../../hostile-input/request-checks';
import { idempotencyHeaders, json, key, write } from '../../http/openapi';
import { route, Route, type GatewayPart, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, Writes, type Write } from '../../writes/submit';
import { admitMessage, type MessageBody, type MessageRequest } from '../message';
import { notPending, targetRefused, type TargetWords } from '../target';

/**
 * The move input kind as the gateway takes it, in one module: its route entry (`MOVE_ROUTES`:
 * it routes the controller and writes the OpenAPI document), its handler (it builds the record
 * and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`MOVE`).
 */
export const MOVE_ROUTES = {
  move: route('post', '/v1/conversations/{key}/inputs/{id}/move', 'Move a pending follow-up in the queue', {
    description:
      'Puts a pending follow-up (a chat waiting in the queue) just before another input waiting in the queue (`before`), or at the end (`before: null`); the turns then start in the new order. The move has an id of its own (`id` or `Idempotency-Key`): sent again, it answers the same; the same id moving another input or to another place is 422. 409 once the input is no longer pending (delivered, taken back, dropped, refused: `details.state`), when it is a steer (`details.kind`), or when `before` is not another input waiting in the queue (`details.before`); 404 when nobody knows the input.',
    requestParams: { path: z.object({ key, id: InputId }), header: idempotencyHeaders },
    requestBody: { required: true, ...json(MoveBody.meta({ id: 'MoveBody' })) },
    responses: write(200, 'moved: the follow-up and its place now', MovedAnswer, ['conflict', 'not_found', 'id_reused']),
  }),
} satisfies Routes;

/** How its answers speak of it (`target.ts`). */
const MOVING: TargetWords = { verb: 'move', request: 'move', does: 'moves', done: 'moved' };

/** A move's body: no texts. */
const MOVE_BODY: MessageBody<MoveBody> = { schema: MoveBody, what: 'move body', texts: () => [] };

export type MoveRequest = MessageRequest & {
  /** Already validated (`InputId`): the pending follow-up to move. */
  target: string;
};

/**
 * `POST /v1/conversations/{key}/inputs/{id}/move` `{before, id?}`: checks the body (400), the
 * client's id and the write access (403), and submits one `MoveInputV1` under the move's own id,
 * answering the worker's decision on it, made under the conversation's lock so it is serialized
 * with the turn that would start from the input: `input.moved` → 200 `{id, before, position}`;
 * `move.refused` → 409 when the input is known but no longer pending, or is a steer, or when
 * `before` does not wait in the queue; 404 when nobody knows the input.
 *
 * The same move sent again is answered by its decision while this gateway keeps it (its recent
 * events); an input the companion already shows as no longer pending is 409 at once, nothing produced.
 */
@Injectable()
export class MoveHandler {
  private readonly write: Write<'move', MoveAnswer> = {
    known: async (input, seen) => {
      // Decided before, and still among the recent events: answered by that decision.
      if (seen !== undefined) return undefined;
      const known = await this.companion.input(input.conversation, input.target);
      if (known !== null && known.state !== 'pending') throw notPending(MOVING, input.target, known.state);
      return undefined;
    },
    answered: (moved) => moved,
    refused: (refusal, input) => this.refusal(refusal, input),
    late: ({ id, target }, seconds) =>
      new GatewayError(
        'unavailable',
        `the move ${id} of input ${target} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `send it again with the same id to get its answer, or read the conversation's status (its queue's order)`,
        { move: id, target },
      ),
    reused: ({ id }) => new GatewayError('id_reused', `move ${id} was sent before for another input or place; use a new id`),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async move(request: MoveRequest): Promise<MoveAnswer> {
    // No texts to bound: `maxChars` plays no part.
    const { body, sender } = await admitMessage(request, MOVE_BODY, 0, this.access);
    // `before` names an input, whose id is a path segment elsewhere (`/inputs/{id}`): no dot segments, as a body `id`.
    if (body.before !== null && isDotSegment(body.before)) throw new GatewayError('bad_request', 'bad before: an input id may not be or hold a "." or ".." segment');
    if (body.before === request.target) throw new GatewayError('bad_request', `input ${request.target} cannot be moved before itself`);
    return this.writes.submit(inputRecord('move', sender, { target: request.target, before: body.before }), this.write);
  }

  /** The worker's refusal: 403 and 409/404 as a retraction's (`targetRefused`), 409 for a steer, or for a `before` that does not wait in the queue. */
  private async refusal({ code, message }: MoveRefusal, input: InputOf<'move'>): Promise<GatewayError> {
    switch (code) {
      case 'forbidden':
      case 'not_found':
        return targetRefused(this.companion, MOVING, input.conversation, input.target, code);
      case 'not_follow_up':
        return new GatewayError('conflict', `move ${input.id} was refused: ${message}`, { id: input.target, kind: 'steer' });
      case 'before':
        return new GatewayError('conflict', `move ${input.id} was refused: ${message}; read the conversation's status (its queue) and move it again with a new id`, {
          id: input.target,
          before: input.before,
        });
      default: {
        const never: never = code;
        return never;
      }
    }
  }
}

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class MoveController {
  constructor(@Inject(MoveHandler) private readonly handler: MoveHandler) {}

  /** 200 `{id, before, position}` once the worker has moved the follow-up; 409 once not a pending follow-up, 404 when unknown. */
  @Route(MOVE_ROUTES.move)
  move(
    @Param('key') rawKey: string,
    @Param('id') rawId: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<MoveAnswer> {
    const key = conversationKeyOf(rawKey);
    const target = parseEdge(InputId, rawId, 'input id');
    return this.handler.move({ key, subject, target, body, idempotencyKey });
  }
}

/** The move input kind: its route, controller and handler, as one part of the gateway. */
export const MOVE: GatewayPart = { routes: MOVE_ROUTES, controllers: [MoveController], providers: [MoveHandler] };
