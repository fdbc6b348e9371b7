import { randomUUID } from 'node:crypto';
import { Body, Controller, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { type GrantAnswer, GrantBody, GrantDecisionAnswer, Subject as SubjectName } from '@rudder/contracts';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf, parseEdge, requireJsonBody } from '../../http/edge';
import { json, key, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, type Write, Writes } from '../../writes/submit';

/**
 * The grant input kind as the gateway takes it, in one module: its route entries (`GRANT_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`GRANT`).
 */
export const GRANT_ROUTES = {
  grant: route('put', '/v1/conversations/{key}/grants/{subject}', 'The owner grants a subject read or write access', {
    requestParams: { path: z.object({ key, subject: SubjectName }) },
    requestBody: { required: true, ...json(GrantBody.meta({ id: 'GrantBody' })) },
    responses: write(200, 'granted', GrantDecisionAnswer, ['not_found', 'conflict']),
  }),
  revoke: route('delete', '/v1/conversations/{key}/grants/{subject}', 'The owner revokes a grant', {
    requestParams: { path: z.object({ key, subject: SubjectName }) },
    responses: write(200, 'revoked (`access: null`)', GrantDecisionAnswer, ['not_found', 'conflict']),
  }),
} satisfies Routes;

export type GrantRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The grantee, from the path, unvalidated. */
  grantee: string;
  /** `PUT`: the parsed JSON body, unvalidated; `DELETE`: revoke. */
  body: unknown | 'revoke';
};

/**
 * `PUT /v1/conversations/{key}/grants/{subject}` `{access: read|write}` and `DELETE`: a grant
 * is an input like any other, submitted to agent.inputs and decided by the worker in the
 * conversation's log (only the owner grants; `access.granted` → 200 `{subject, access}`,
 * `grant.refused` → 403 for anyone but the owner, 404 for a conversation nobody opened yet, 409
 * for a grant to the owner itself, whose access never changes).
 * Nothing is checked against the companion first: the decision is the worker's alone.
 */
@Injectable()
export class GrantHandler {
  constructor(@Inject(Writes) private readonly writes: Writes) {}

  async grant(request: GrantRequest): Promise<GrantAnswer> {
    const grantee = parseEdge(SubjectName, request.grantee, 'subject');
    let access: 'read' | 'write' | null = null;
    if (request.body !== 'revoke') {
      requireJsonBody(request.body);
      access = parseEdge(GrantBody, request.body, 'grant body').access;
    }
    return this.writes.submit(inputRecord('grant', { id: randomUUID(), key: request.key, subject: request.subject }, { grantee, access }), GRANT_WRITE);
  }
}

const GRANT_WRITE: Write<'grant', GrantAnswer> = {
  answered: (granted) => granted,
  refused: (code, { conversation: key, grantee }) => {
    if (code === 'not_found') return new GatewayError('not_found', `no conversation ${key}: nobody wrote to it yet`);
    if (code === 'owner') return new GatewayError('conflict', `${grantee} owns ${key}: the owner always reads and writes it; grant access to another subject`, { subject: grantee });
    return new GatewayError('forbidden', `only the owner of ${key} grants access to it`);
  },
  late: ({ id }, seconds) =>
    new GatewayError('unavailable', `the grant ${id} was sent, but the worker has not decided on it within ${seconds} s; read the status to see it`, { grant: id }),
};

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class GrantController {
  constructor(@Inject(GrantHandler) private readonly handler: GrantHandler) {}

  /** 200 `{subject, access}` once the worker granted it; 403 for anyone but the owner. */
  @Route(GRANT_ROUTES.grant)
  grant(@Param('key') key: string, @Param('subject') grantee: string, @Body() body: unknown, @Subject() subject: string): Promise<GrantAnswer> {
    return this.handler.grant({ key: conversationKeyOf(key), subject, grantee, body });
  }

  /** 200 `{subject, access: null}` once the worker took the grant back; 403 for anyone but the owner. */
  @Route(GRANT_ROUTES.revoke)
  revoke(@Param('key') key: string, @Param('subject') grantee: string, @Subject() subject: string): Promise<GrantAnswer> {
    return this.handler.grant({ key: conversationKeyOf(key), subject, grantee, body: 'revoke' });
  }
}

/** The grant input kind: its routes, controller and handler, as one part of the gateway. */
export const GRANT: GatewayPart = { routes: GRANT_ROUTES, controllers: [GrantController], providers: [GrantHandler] };
