import { randomUUID } from 'node:crypto';
import { Body, Controller, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { type StopAnswer, StopBody, StopDecisionAnswer } from '@rudder/contracts';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { conversation, json, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, type Write, Writes } from '../../writes/submit';

/**
 * The stop input kind as the gateway takes it, in one module: its route entries (`STOP_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`STOP`).
 */
export const STOP_ROUTES = {
  stop: route('post', '/v1/conversations/{key}/stop', 'Stop the running turn (that turn only, when `turn` is named); `graceful: true` asks it to wind down', {
    requestParams: { path: conversation },
    requestBody: { required: false, ...json(StopBody.meta({ id: 'StopBody' })) },
    responses: write(202, 'the worker decided', StopDecisionAnswer, []),
  }),
} satisfies Routes;

export type StopRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body (the same as `{}`). */
  body: unknown;
};

/**
 * `POST /v1/conversations/{key}/stop` `{discardPending?, turn?, graceful?}`: submits one stop (its own
 * fresh id: a stop repeated is another stop, harmless) and answers the worker's decision on
 * it, made under the conversation's lock: the turn it stopped (null when none ran, or when the
 * turn it names is no longer running — then it stops and discards nothing). With
 * `discardPending: true` the worker also drops every pending input of the conversation, each
 * reported on the stream as `input.discarded` (never answered). A subject that may not write
 * is refused 403 by the worker too (`stop.refused`). With `graceful: true` the turn winds down
 * instead: its tools see `windDown`, the model is asked once more, and it ends `completed`.
 */
@Injectable()
export class StopHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async stop(request: StopRequest): Promise<StopAnswer> {
    const body = parseEdge(StopBody, request.body ?? {}, 'stop body');
    await this.access.mayWrite(request.key, request.subject);
    const input = inputRecord('stop', { id: randomUUID(), key: request.key, subject: request.subject }, {
      discardPending: body.discardPending ?? false,
      ...(body.turn === undefined ? {} : { turn: body.turn }),
      ...(body.graceful ? { graceful: true } : {}),
    });
    return this.writes.submit(input, STOP_WRITE);
  }
}

const STOP_WRITE: Write<'stop', StopAnswer> = {
  answered: ({ turn }) => ({ turn }),
  refused: (_code, input) => new GatewayError('forbidden', `${input.subject} may not stop turns of conversation ${input.conversation}`),
  // Whether it stopped a turn shows in the status.
  late: (input, seconds) =>
    new GatewayError('unavailable', `the stop ${input.id} was sent, but the worker has not decided on it within ${seconds} s; read the conversation's status`, {
      stop: input.id,
    }),
};

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class StopController {
  constructor(@Inject(StopHandler) private readonly handler: StopHandler) {}

  /** 202 `{turn}`: the turn the worker stopped (null when none ran, or the named one no longer runs). */
  @Route(STOP_ROUTES.stop)
  stop(@Param('key') key: string, @Body() body: unknown, @Subject() subject: string): Promise<StopAnswer> {
    return this.handler.stop({ key: conversationKeyOf(key), subject, body });
  }
}

/** The stop input kind: its routes, controller and handler, as one part of the gateway. */
export const STOP: GatewayPart = { routes: STOP_ROUTES, controllers: [StopController], providers: [StopHandler] };
