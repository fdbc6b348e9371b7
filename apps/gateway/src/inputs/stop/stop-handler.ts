import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { StopBody, type StopAnswer } from '@rudder/contracts';
import { ConversationAccess } from '../../companion/conversation-access';
import { parseEdge } from '../../http/edge';
import { GatewayError } from '../../errors/gateway-error';
import { inputRecord, Writes, type Write } from '../../writes/submit';

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
    return this.writes.submit(input, STOP);
  }
}

const STOP: Write<'stop', StopAnswer> = {
  answered: ({ turn }) => ({ turn }),
  refused: (_code, input) => new GatewayError('forbidden', `${input.subject} may not stop turns of conversation ${input.conversation}`),
  // Whether it stopped a turn shows in the status.
  late: (input, seconds) =>
    new GatewayError('unavailable', `the stop ${input.id} was sent, but the worker has not decided on it within ${seconds} s; read the conversation's status`, {
      stop: input.id,
    }),
};
