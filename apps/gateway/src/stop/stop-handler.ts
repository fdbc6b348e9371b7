import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { StopBody, type StopAnswer, type StopInput } from '@rudder/contracts';
import { ConversationAccess } from '../auth/conversation-access';
import { Decisions } from '../decisions';
import { parseEdge } from '../edge';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from '../inputs-publisher';

export type StopRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body (the same as `{}`). */
  body: unknown;
};

/**
 * `POST /v1/conversations/{key}/stop` `{discardPending?, turn?}`: produces one stop to
 * `agent.inputs` (its own fresh id: a stop repeated is another stop, harmless) and answers the
 * worker's decision on it, made under the conversation's lock: the turn it stopped (null when
 * none ran, or when the turn it names is no longer running — then it stops and discards
 * nothing). With `discardPending: true` the worker also drops every pending input of the
 * conversation, each reported on the stream as `input.discarded` (never answered). A subject
 * that may not write is refused 403 by the worker too (`stop.refused`).
 */
@Injectable()
export class StopHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(Decisions) private readonly decisions: Decisions,
  ) {}

  async stop(request: StopRequest): Promise<StopAnswer> {
    const body = parseEdge(StopBody, request.body ?? {}, 'stop body');
    await this.access.mayWrite(request.key, request.subject);
    const id = randomUUID();
    const decision = this.decisions.watch(request.key, [id], (event) => {
      if (event.type === 'stop.requested' && event.data.stop === id) return { turn: event.data.turn };
      if (event.type === 'stop.refused' && event.data.stop === id) return { refused: event.data.code };
      return undefined;
    });
    try {
      const input: StopInput = {
        v: 1,
        type: 'stop',
        id,
        conversation: request.key,
        subject: request.subject,
        discardPending: body.discardPending ?? false,
        ...(body.turn === undefined ? {} : { turn: body.turn }),
        sentAt: new Date().toISOString(),
      };
      await this.publisher.publish(input);
      const decided = await this.decisions.within(decision.result, (seconds) => late(id, seconds));
      if ('refused' in decided) throw new GatewayError('forbidden', `${request.subject} may not stop turns of conversation ${request.key}`);
      return { turn: decided.turn };
    } finally {
      decision.cancel();
    }
  }
}

/** No decision in time: the stop was sent; whether it stopped a turn shows in the status. */
const late = (id: string, seconds: number) =>
  new GatewayError('unavailable', `the stop ${id} was sent, but the worker has not decided on it within ${seconds} s; read the conversation's status`, {
    stop: id,
  });
