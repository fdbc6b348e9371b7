import { randomUUID } from 'node:crypto';
import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { ForkBody, ForkedAnswer, type ForkAnswer } from '@rudder/contracts';
import type { ForkRefusal, InputOf } from '@rudder/conversation';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { clientIdOf, conversationKeyOf, parseEdge, requireJsonBody } from '../../http/edge';
import { conversation, idempotencyHeaders, json, write } from '../../http/openapi';
import { route, Route, type GatewayPart, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, Writes, type Write } from '../../writes/submit';
import type { MessageRequest } from '../message';

/**
 * The fork input kind as the gateway takes it, in one module: its route entry (`FORK_ROUTES`),
 * its handler (it builds the record — keyed by the NEW conversation, whose worker decides it —
 * and submits it through the one write path, `Writes.submit`), its controller, and the three as
 * one part of the gateway (`FORK`).
 */
export const FORK_ROUTES = {
  fork: route('post', '/v1/conversations/{key}/fork', 'Fork the conversation into a new one', {
    description:
      "Makes a new conversation, `into`, whose history is this one's up to and including `atTurn` (a turn that ended and was not rolled back; absent: the latest that ended): what this conversation's model requests carried of those turns (their prompts, steered messages and answers, and the summary of the older ones when a compaction covered them), and the plan as it was then. Its owner is the subject that forks; grants are not copied; this conversation is never written. Needs `read` on this conversation (404 / 403 as its reads). The fork has an id of its own (`id` or `Idempotency-Key`): sent again, it answers the same and forks once. 409 when `into` is a conversation already, or when `atTurn` is still running; 404 for an unknown `atTurn`.",
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(ForkBody.meta({ id: 'ForkBody' })) },
    responses: write(201, 'forked: the new conversation and the turn its history ends with', ForkedAnswer, ['conflict', 'not_found', 'id_reused']),
  }),
} satisfies Routes;

/**
 * `POST /v1/conversations/{key}/fork` `{into, atTurn?, id?}`: checks the body (400), the client's
 * id, and `read` on the source as its reads check it (404, 403), and submits one `ForkInputV1` to
 * `into` under the fork's id, answering the worker's decision, made under `into`'s lock with the
 * source read from the event store (so a read access revoked meanwhile is seen):
 * `conversation.forked` → 201 `{key, from, atTurn}`; `fork.refused` → 403, 404, 409.
 */
@Injectable()
export class ForkHandler {
  private readonly write: Write<'fork', ForkAnswer> = {
    answered: (answer) => answer,
    refused: (refusal, input) => forkRefused(refusal, input),
    late: ({ id }, seconds) =>
      new GatewayError(
        'unavailable',
        `the fork ${id} was sent, but the worker has not decided on it within ${seconds} s; send it again with the same id to get its answer (it forks once)`,
        { fork: id },
      ),
    reused: ({ id }) => new GatewayError('id_reused', `fork ${id} was sent before asking another fork; use a new id`),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async fork(request: MessageRequest): Promise<ForkAnswer> {
    requireJsonBody(request.body);
    const body = parseEdge(ForkBody, request.body, 'fork body');
    const id = clientIdOf(body.id, request.idempotencyKey) ?? randomUUID();
    await this.access.readable(request.key, request.subject);
    const input = inputRecord('fork', { id, key: body.into, subject: request.subject }, {
      from: request.key,
      ...(body.atTurn === undefined ? {} : { atTurn: body.atTurn }),
    });
    return this.submit(input);
  }

  /** Submits a fork through the one write path and answers the worker's decision; other doors submit their forks with it (`Inputs.fork`). */
  submit(input: InputOf<'fork'>): Promise<ForkAnswer> {
    return this.writes.submit(input, this.write);
  }
}

/** The worker's refusal: 404 and 403 as the source's reads, 409 for an `into` that exists or a turn still running. */
function forkRefused({ code, message }: ForkRefusal, input: InputOf<'fork'>): GatewayError {
  const refused = `fork ${input.id} was refused: ${message}`;
  switch (code) {
    case 'forbidden':
      return new GatewayError('forbidden', `the worker refused the fork: ${message}`);
    case 'not_found':
      return new GatewayError('not_found', refused, input.atTurn === undefined ? undefined : { atTurn: input.atTurn });
    case 'conflict':
      return new GatewayError('conflict', refused, { into: input.conversation });
    case 'busy':
      return new GatewayError('conflict', refused, { atTurn: input.atTurn ?? null });
    default: {
      const never: never = code;
      return never;
    }
  }
}

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class ForkController {
  constructor(@Inject(ForkHandler) private readonly handler: ForkHandler) {}

  /** 201 `{key, from, atTurn}` once the worker has forked; 409 for an `into` that exists or a running turn, 404, 403. */
  @Route(FORK_ROUTES.fork)
  fork(@Param('key') rawKey: string, @Body() body: unknown, @Headers('idempotency-key') idempotencyKey: string | undefined, @Subject() subject: string): Promise<ForkAnswer> {
    return this.handler.fork({ key: conversationKeyOf(rawKey), subject, body, idempotencyKey });
  }
}

/** The fork input kind: its route, controller and handler, as one part of the gateway. */
export const FORK: GatewayPart = { routes: FORK_ROUTES, controllers: [ForkController], providers: [ForkHandler] };
