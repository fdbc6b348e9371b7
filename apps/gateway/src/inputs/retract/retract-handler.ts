import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { RetractAnswer } from '@rudder/contracts';
import type { InputOf } from '@rudder/conversation';
import { ConversationAccess } from '../../companion/conversation-access';
import { CompanionClient } from '../../companion/companion-client';
import { GatewayError } from '../../errors/gateway-error';
import { inputRecord, Writes, type Write } from '../../writes/submit';
import { notPending, targetRefused } from '../target';

/** What to take back: an input by id, or the latest pending one of a queue. */
export type RetractTarget = InputOf<'retract'>['target'];

export type RetractRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Already validated. */
  target: RetractTarget;
};

/**
 * `DELETE /v1/conversations/{key}/inputs/{id}` and `DELETE .../inputs?latest=chat|steer`:
 * submits one `RetractInputV1` (a fresh id of its own) and answers the worker's decision on
 * it, made under the conversation's lock so it is serialized with the turn that would take
 * the input: `input.retracted` → 200 `{id, text}` of the input taken back; `retract.refused`
 * → 409 `conflict` when the input is known but no longer pending (delivered, retracted,
 * discarded, refused), 404 `not_found` when nobody knows it (or, with `latest`, nothing of
 * that kind is pending).
 *
 * An input the companion already shows as no longer pending is 409 at once, nothing produced
 * (those states are final). One it does not know yet may be a moment old (the companion lags
 * `agent.inputs`), so the worker is asked.
 */
@Injectable()
export class RetractHandler {
  private readonly write: Write<'retract', RetractAnswer> = {
    known: async ({ conversation, target }) => {
      if (!('id' in target)) return undefined;
      const known = await this.companion.input(conversation, target.id);
      if (known !== null && known.state !== 'pending') throw notPending('retract', target.id, known.state);
      return undefined;
    },
    answered: (retracted) => retracted,
    refused: (code, { conversation, target }) => targetRefused(this.companion, 'retract', conversation, 'id' in target ? target.id : target, code),
    // Whether it took the input back shows in the status.
    late: ({ id, target }, seconds) =>
      new GatewayError(
        'unavailable',
        `the retraction ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `read the conversation's status before sending it again (the input is gone from it once retracted)`,
        { retract: id, target },
      ),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async retract(request: RetractRequest): Promise<RetractAnswer> {
    const { key, target } = request;
    await this.access.mayWrite(key, request.subject);
    return this.writes.submit(inputRecord('retract', { id: randomUUID(), key, subject: request.subject }, { target }), this.write);
  }
}
