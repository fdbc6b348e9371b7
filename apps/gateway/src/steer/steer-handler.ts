import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SteerBody, type SteerAnswer } from '@rudder/contracts';
import type { Outcome } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient, type CompanionInput } from '../companion/companion-client';
import { Decisions } from '../writes/decisions';
import { isSameSteer } from '../writes/same-input';
import { checkTextLength, clientIdOf, parseEdge, requireJsonBody } from '../http/edge';
import { GatewayError } from '../errors/gateway-error';
import { CONFIG } from '../tokens';
import { inputRecord, Writes, type Write } from '../writes/submit';

export type SteerRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body. */
  body: unknown;
  /** The `Idempotency-Key` header, unvalidated. */
  idempotencyKey: string | undefined;
};

/**
 * `POST /v1/conversations/{key}/steer`: validates the message like a chat and submits it
 * (`Writes.submit`), answering the worker's decision on it (the steer's receipt:
 * `steer.accepted`, the turn that will take it and whether it lands there; `input.rejected`:
 * 412/429). Every check that can refuse the request (400/413, 401/403, a reused id) runs
 * before the one produce. The log may hold another input under the id (a chat, or a steer
 * with other text, sent before the companion showed it): that is no answer to this steer, and
 * the id is reused (422), as it is once the companion shows the first input.
 */
@Injectable()
export class SteerHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
    @Inject(Decisions) private readonly decisions: Decisions,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async steer(request: SteerRequest): Promise<SteerAnswer> {
    requireJsonBody(request.body);
    const body = parseEdge(SteerBody, request.body, 'steer body');
    checkTextLength(body.text, 'text', this.config.MAX_TEXT_CHARS);
    const clientId = clientIdOf(body.id, request.idempotencyKey);
    await this.access.mayWrite(request.key, request.subject);
    const input = inputRecord('steer', { id: clientId ?? randomUUID(), key: request.key, subject: request.subject }, {
      text: body.text,
      ...(body.ifLastInputId === undefined ? {} : { ifLastInputId: body.ifLastInputId }),
    });
    return this.writes.submit(input, this.write(clientId !== undefined));
  }

  /** How a steer is submitted (`Writes.submit`); the Responses door submits its steer extension with it. */
  write(idFromClient: boolean): Write<'steer', SteerAnswer> {
    return {
      // A new id (ours, or one the companion has not seen) is produced; the worker dedupes
      // ids, so a retry racing the companion's lag is still answered once.
      known: async (input) => {
        const earlier = idFromClient ? await this.companion.input(input.conversation, input.id) : null;
        if (earlier === null) return undefined;
        if (!isSameSteer(earlier, input.text)) throw reused(input.id, earlier.kind);
        // The same steer again: the worker has it, so nothing is produced; its decision is
        // stored, or on its way.
        return known(earlier);
      },
      answered: (answer, input) => ({ id: input.id, turn: answer.turn, landed: answer.landed }),
      refused: (rejection, input) => this.decisions.rejected(input.conversation, { id: input.id, kind: 'steer' }, rejection),
      late: (input, seconds) => late(input.id, seconds),
      reused: (input) => reused(input.id),
    };
  }
}

/** The decision on a steer the companion knows, if it has one (its input view's `steer`, or its `rejection`); else it is on its way. */
function known(earlier: CompanionInput): Outcome<'steer'> | 'sent' {
  if (earlier.state === 'rejected' && earlier.rejection) return { refusal: earlier.rejection };
  if (earlier.steer) return { answer: { turn: earlier.steer.turn, landed: earlier.steer.landed } };
  return 'sent';
}

const reused = (id: string, kind?: string) => new GatewayError('id_reused', `input ${id} was sent before as another ${kind ?? 'input'} or with other text; use a new id`);

/** No decision in time: the steer was sent, and the same id again gets its answer without sending it twice. */
const late = (id: string, seconds: number) =>
  new GatewayError(
    'unavailable',
    `steer ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
      `retry with the same id (${id}) to get its answer: it will not be sent twice`,
    { id },
  );
