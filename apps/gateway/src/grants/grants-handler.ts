import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { GrantBody, Subject, type EventDataOf, type GrantAnswer, type GrantInput } from '@rudder/contracts';
import { Decisions } from '../decisions';
import { parseEdge, requireJsonBody } from '../edge';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from '../inputs-publisher';

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
 * is an input like any other, produced to agent.inputs and decided by the worker in the
 * conversation's log (only the owner grants; `access.granted` → 200 `{subject, access}`,
 * `grant.refused` → 403 for anyone but the owner, 404 for a conversation nobody opened yet, 409
 * for a grant to the owner itself, whose access never changes).
 * Nothing is checked against the companion first: the decision is the worker's alone.
 */
@Injectable()
export class GrantsHandler {
  constructor(
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(Decisions) private readonly decisions: Decisions,
  ) {}

  async grant(request: GrantRequest): Promise<GrantAnswer> {
    const grantee = parseEdge(Subject, request.grantee, 'subject');
    let access: 'read' | 'write' | null = null;
    if (request.body !== 'revoke') {
      requireJsonBody(request.body);
      access = parseEdge(GrantBody, request.body, 'grant body').access;
    }
    const id = randomUUID();
    const decision = this.decisions.watch(request.key, [id], (event): { answer: GrantAnswer } | { refused: EventDataOf<'grant.refused'>['code'] } | undefined => {
      if (event.type === 'access.granted' && event.data.grant === id) return { answer: { subject: event.data.subject, access: event.data.access } };
      if (event.type === 'grant.refused' && event.data.grant === id) return { refused: event.data.code };
      return undefined;
    });
    try {
      const input: GrantInput = { v: 1, type: 'grant', id, conversation: request.key, subject: request.subject, grantee, access, sentAt: new Date().toISOString() };
      await this.publisher.publish(input);
      const decided = await this.decisions.within(decision.result, (seconds) => late(id, seconds));
      if ('answer' in decided) return decided.answer;
      if (decided.refused === 'not_found') throw new GatewayError('not_found', `no conversation ${request.key}: nobody wrote to it yet`);
      if (decided.refused === 'owner') throw new GatewayError('conflict', `${grantee} owns ${request.key}: the owner always reads and writes it; grant access to another subject`, { subject: grantee });
      throw new GatewayError('forbidden', `only the owner of ${request.key} grants access to it`);
    } finally {
      decision.cancel();
    }
  }
}

const late = (id: string, seconds: number) =>
  new GatewayError('unavailable', `the grant ${id} was sent, but the worker has not decided on it within ${seconds} s; read the status to see it`, { grant: id });
