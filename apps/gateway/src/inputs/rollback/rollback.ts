import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { RollbackBody, RolledBackAnswer, type RollbackAnswer } from '@rudder/contracts';
import type { InputOf, RollbackRefusal } from '@rudder/conversation';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf } from '../../http/edge';
import { conversation, idempotencyHeaders, json, write } from '../../http/openapi';
import { route, Route, type GatewayPart, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, Writes, type Write } from '../../writes/submit';
import { admitMessage, type MessageBody, type MessageRequest } from '../message';

/**
 * The rollback input kind as the gateway takes it, in one module: its route entry
 * (`ROLLBACK_ROUTES`: it routes the controller and writes the OpenAPI document), its handler (it
 * builds the record and submits it through the one write path, `Writes.submit`, with how its
 * receipt is answered), its controller, and the three as one part of the gateway (`ROLLBACK`).
 */
export const ROLLBACK_ROUTES = {
  rollback: route('post', '/v1/conversations/{key}/rollback', 'Roll back the last ended turns', {
    description:
      "Rolls back the last `turns` ended turns, or every turn after `toTurn` (which stays the last one): they are left out of every later model request (history, budget, compaction: a summary that covered one is dropped), the transcript shows them only with `?include=rolledBack`, the steered messages they took go with them, and their changes to the plan are undone. Nothing is deleted: the rollback is an event of the log (`turns.rolledBack`). It has an id of its own (`id` or `Idempotency-Key`): sent again, it answers the same; the same id asking another rollback is 422. `ifLastTurn` refuses it (412) when the last turn that ended is another one. While a turn runs (a parked one too) it is 409, unless `stopRunning: true` asks to stop that turn first: it is then stopped (its waiting calls closed as a stop closes them) and rolled back as the last of the turns, counted among `turns`. 404 when `toTurn` is not a turn that ended and was not rolled back (among the last 16); 409 when `turns` asks for more than there are.",
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(RollbackBody.meta({ id: 'RollbackBody' })) },
    responses: write(200, 'rolled back: the turns, oldest first', RolledBackAnswer, ['conflict', 'not_found', 'precondition_failed', 'id_reused']),
  }),
} satisfies Routes;

/** A rollback's body: no texts. */
const ROLLBACK_BODY: MessageBody<RollbackBody> = { schema: RollbackBody, what: 'rollback body', texts: () => [] };

/**
 * `POST /v1/conversations/{key}/rollback` `{turns | toTurn, ifLastTurn?, stopRunning?, id?}`:
 * checks the body (400), the client's id and the write access (403), and submits one
 * `RollbackInputV1` under the rollback's id, answering the worker's decision on it, made under
 * the conversation's lock: `turns.rolledBack` → 200 `{turns, stopped}`; `rollback.refused` → 403,
 * 412 (`details.lastTurn`), 409 while a turn runs (`details.running`) or for more turns than
 * there are (`details.available`), 404 for an unknown `toTurn`.
 *
 * The same rollback sent again is answered by its decision while this gateway keeps it (its
 * recent events), as an edit is.
 */
@Injectable()
export class RollbackHandler {
  private readonly write: Write<'rollback', RollbackAnswer> = {
    answered: ({ turns, stopped }) => ({ turns, stopped }),
    refused: (refusal, input) => rollbackRefused(refusal, input),
    late: ({ id }, seconds) =>
      new GatewayError(
        'unavailable',
        `the rollback ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `send it again with the same id to get its answer, or read the conversation's turns (a rolled-back turn says so)`,
        { rollback: id },
      ),
    reused: ({ id }) => new GatewayError('id_reused', `rollback ${id} was sent before asking another rollback; use a new id`),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async rollback(request: MessageRequest): Promise<RollbackAnswer> {
    // No texts to bound: `maxChars` plays no part.
    const { body, sender } = await admitMessage(request, ROLLBACK_BODY, 0, this.access);
    const input = inputRecord('rollback', sender, {
      asked: body.turns === undefined ? { toTurn: body.toTurn ?? '' } : { turns: body.turns },
      ...(body.ifLastTurn === undefined ? {} : { ifLastTurn: body.ifLastTurn }),
      ...(body.stopRunning ? { stopRunning: true } : {}),
    });
    return this.writes.submit(input, this.write);
  }
}

/** The worker's refusal: 403, 412 with the last turn, 409 while a turn runs or past the turns there are, 404 for an unknown `toTurn`. */
function rollbackRefused({ code, message, lastTurn, running, available }: RollbackRefusal, input: InputOf<'rollback'>): GatewayError {
  const refused = `rollback ${input.id} was refused: ${message}`;
  switch (code) {
    case 'forbidden':
      return new GatewayError('forbidden', `the worker refused the rollback: ${message}`);
    case 'precondition_failed':
      return new GatewayError('precondition_failed', `${refused}; read the turns again and roll back with a new id if it still applies`, { lastTurn: lastTurn ?? null });
    case 'busy':
      return new GatewayError('conflict', refused, { running: running ?? null });
    case 'too_far':
      return new GatewayError('conflict', refused, { available: available ?? 0 });
    case 'not_found':
      return new GatewayError('not_found', refused, 'toTurn' in input.asked ? { toTurn: input.asked.toTurn } : undefined);
    default: {
      const never: never = code;
      return never;
    }
  }
}

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class RollbackController {
  constructor(@Inject(RollbackHandler) private readonly handler: RollbackHandler) {}

  /** 200 `{turns, stopped}` once the worker has rolled the turns back; 409 while a turn runs (unless `stopRunning`), 412, 404. */
  @Route(ROLLBACK_ROUTES.rollback)
  rollback(@Param('key') rawKey: string, @Body() body: unknown, @Headers('idempotency-key') idempotencyKey: string | undefined, @Subject() subject: string): Promise<RollbackAnswer> {
    return this.handler.rollback({ key: conversationKeyOf(rawKey), subject, body, idempotencyKey });
  }
}

/** The rollback input kind: its route, controller and handler, as one part of the gateway. */
export const ROLLBACK: GatewayPart = { routes: ROLLBACK_ROUTES, controllers: [RollbackController], providers: [RollbackHandler] };
