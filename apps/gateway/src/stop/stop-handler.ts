import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { StopBody, type StopAnswer, type StopInput } from '@rudder/contracts';
import { ConversationAccess } from '../auth/conversation-access';
import { parseEdge } from '../edge';
import { InputsPublisher } from '../inputs-publisher';

export type StopRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body (the same as `{}`). */
  body: unknown;
};

/**
 * `POST /v1/conversations/{key}/stop`: produces one stop to `agent.inputs` (its own fresh
 * id: a stop repeated is another stop, harmless) and answers the turn that was running at
 * that moment, as the companion saw it (null when none ran). The worker decides what the
 * stop ends; `stop.requested` on the event stream says which turn it was. With
 * `discardPending: true` the worker also drops every pending input of the conversation, each
 * reported on the stream as `input.discarded` (never answered).
 */
@Injectable()
export class StopHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
  ) {}

  async stop(request: StopRequest): Promise<StopAnswer> {
    const body = parseEdge(StopBody, request.body ?? {}, 'stop body');
    const status = await this.access.require(request.key, request.subject, 'write');
    const input: StopInput = {
      v: 1,
      type: 'stop',
      id: randomUUID(),
      conversation: request.key,
      subject: request.subject,
      discardPending: body.discardPending ?? false,
      sentAt: new Date().toISOString(),
    };
    await this.publisher.publish(input);
    return { turn: status?.running?.turn ?? null };
  }
}
