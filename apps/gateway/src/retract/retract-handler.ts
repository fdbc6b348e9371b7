import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { RetractAnswer, RetractInput } from '@rudder/contracts';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient } from '../companion-client';
import { Decisions, notPending } from '../decisions';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from '../inputs-publisher';

/** What to take back: an input by id, or the latest pending one of a queue. */
export type RetractTarget = { id: string } | { latest: 'chat' | 'steer' };

export type RetractRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Already validated. */
  target: RetractTarget;
};

type RetractDecision = { retracted: RetractAnswer } | { refused: 'delivered' | 'not_found' | 'forbidden' };

/**
 * `DELETE /v1/conversations/{key}/inputs/{id}` and `DELETE .../inputs?latest=chat|steer`:
 * produces one `RetractInputV1` (a fresh id of its own) and answers the worker's decision on
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
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(Decisions) private readonly decisions: Decisions,
  ) {}

  async retract(request: RetractRequest): Promise<RetractAnswer> {
    const { key, target } = request;
    await this.access.mayWrite(key, request.subject);
    const id = randomUUID();
    const decision = this.decisions.watch(key, [id], (event): RetractDecision | undefined => {
      if (event.type === 'input.retracted' && event.data.retract === id) return { retracted: { id: event.data.input.id, text: event.data.input.text } };
      if (event.type === 'retract.refused' && event.data.retract === id) return { refused: event.data.code };
      return undefined;
    });
    try {
      if ('id' in target) {
        const known = await this.companion.input(key, target.id);
        if (known !== null && known.state !== 'pending') throw notPending('retracted', target.id, known.state);
      }
      const input: RetractInput = { v: 1, type: 'retract', id, conversation: key, subject: request.subject, target, sentAt: new Date().toISOString() };
      await this.publisher.publish(input);
      const decided = await this.decisions.within(decision.result, (seconds) => late(id, target, seconds));
      if ('retracted' in decided) return decided.retracted;
      throw await this.refusal(key, target, decided.refused);
    } finally {
      decision.cancel();
    }
  }

  /** 409 for an input someone knows (the worker said delivered, or the companion has it), else 404. */
  private async refusal(key: string, target: RetractTarget, code: 'delivered' | 'not_found' | 'forbidden'): Promise<GatewayError> {
    if (code === 'forbidden') return new GatewayError('forbidden', `the worker refused the retraction: only who may write to ${key} retracts its inputs`);
    if (!('id' in target)) {
      return new GatewayError('not_found', `conversation ${key} has no pending ${target.latest} to retract`, { latest: target.latest });
    }
    const known = await this.companion.input(key, target.id);
    if (known !== null) return notPending('retracted', target.id, known.state);
    if (code === 'delivered') return notPending('retracted', target.id, 'delivered');
    return new GatewayError('not_found', `conversation ${key} has no input ${target.id}`, { id: target.id });
  }
}

/** No decision in time: the retraction was sent; whether it took the input back shows in the status. */
const late = (id: string, target: RetractTarget, seconds: number) =>
  new GatewayError(
    'unavailable',
    `the retraction ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
      `read the conversation's status before sending it again (the input is gone from it once retracted)`,
    { retract: id, target },
  );
