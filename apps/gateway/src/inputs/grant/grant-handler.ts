import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { GrantBody, Subject, type GrantAnswer } from '@rudder/contracts';
import { parseEdge, requireJsonBody } from '../../http/edge';
import { GatewayError } from '../../errors/gateway-error';
import { inputRecord, Writes, type Write } from '../../writes/submit';

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
    const grantee = parseEdge(Subject, request.grantee, 'subject');
    let access: 'read' | 'write' | null = null;
    if (request.body !== 'revoke') {
      requireJsonBody(request.body);
      access = parseEdge(GrantBody, request.body, 'grant body').access;
    }
    return this.writes.submit(inputRecord('grant', { id: randomUUID(), key: request.key, subject: request.subject }, { grantee, access }), GRANT);
  }
}

const GRANT: Write<'grant', GrantAnswer> = {
  answered: (granted) => granted,
  refused: (code, { conversation: key, grantee }) => {
    if (code === 'not_found') return new GatewayError('not_found', `no conversation ${key}: nobody wrote to it yet`);
    if (code === 'owner') return new GatewayError('conflict', `${grantee} owns ${key}: the owner always reads and writes it; grant access to another subject`, { subject: grantee });
    return new GatewayError('forbidden', `only the owner of ${key} grants access to it`);
  },
  late: ({ id }, seconds) =>
    new GatewayError('unavailable', `the grant ${id} was sent, but the worker has not decided on it within ${seconds} s; read the status to see it`, { grant: id }),
};
