import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { ConversationEvent, PromoteInput, SteerAnswer } from '@rudder/contracts';
import { z } from 'zod';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient, type CompanionInput, type InputState } from '../companion-client';
import { Decisions, notPending } from '../decisions';
import { parseEdge } from '../edge';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from '../inputs-publisher';

/** The promotion takes nothing but the path: `{}` or no body at all. */
const PromoteBody = z.object({}).strict();

export type PromoteRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Already validated (`InputId`): the pending follow-up to promote. */
  target: string;
  /** The parsed JSON body, unvalidated; undefined when the request had none (the same as `{}`). */
  body: unknown;
};

type PromoteDecision = { answer: SteerAnswer } | { refused: 'delivered' | 'not_found' | 'forbidden' };

/**
 * `POST /v1/conversations/{key}/inputs/{id}/promote`: turns a pending follow-up into a steer
 * of the running turn. Produces one `PromoteInputV1` (a fresh id of its own) and answers the
 * worker's decision like a steer's: `steer.accepted` for that input → 200 `{id, turn, landed}`;
 * `promote.refused` → 409 `conflict` when the input is known but not a pending follow-up
 * (delivered, retracted, discarded, refused, or a steer), 404 `not_found` when nobody knows it.
 *
 * An input that already has a steer decision (promoted before, or sent as a steer) is
 * answered with it, nothing produced; so is one the companion shows as no longer pending (409).
 */
@Injectable()
export class PromoteHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(Decisions) private readonly decisions: Decisions,
  ) {}

  async promote(request: PromoteRequest): Promise<SteerAnswer> {
    parseEdge(PromoteBody, request.body ?? {}, 'promote body');
    const { key, target } = request;
    await this.access.mayWrite(key, request.subject);
    const id = randomUUID();
    const decision = this.decisions.watch(key, [id, target], (event): PromoteDecision | undefined => {
      if (event.type === 'promote.refused' && event.data.promote === id) return { refused: event.data.code };
      const answer = steerDecisionOn(event, target);
      return answer && { answer };
    });
    try {
      // Decided in the last minute (a promotion retried, say): that decision, nothing sent.
      if (decision.seen !== undefined && 'answer' in decision.seen) return decision.seen.answer;
      const known = await this.companion.input(key, target);
      if (known !== null) {
        const answered = this.decided(known);
        if (answered) return answered;
        // A steer whose decision is on its way: wait for it; promoting it would be refused.
        if (known.kind === 'steer') {
          if (known.state !== 'pending') throw isSteer(target, known.state);
          return await this.answer(key, target, await this.wait(decision.result, id, target));
        }
        if (known.state !== 'pending') throw notPending('promoted', target, known.state);
      }
      const input: PromoteInput = { v: 1, type: 'promote', id, conversation: key, subject: request.subject, target, sentAt: new Date().toISOString() };
      await this.publisher.publish(input);
      return await this.answer(key, target, await this.wait(decision.result, id, target));
    } finally {
      decision.cancel();
    }
  }

  /** The steer decision on an input the companion knows, from its view. */
  private decided(known: CompanionInput): SteerAnswer | undefined {
    return known.steer ? { id: known.id, turn: known.steer.turn, landed: known.steer.landed } : undefined;
  }

  private wait(decision: Promise<PromoteDecision>, id: string, target: string): Promise<PromoteDecision> {
    return this.decisions.within(decision, (seconds) => late(id, target, seconds));
  }

  private async answer(key: string, target: string, decided: PromoteDecision): Promise<SteerAnswer> {
    if ('answer' in decided) return decided.answer;
    if (decided.refused === 'forbidden') throw new GatewayError('forbidden', `the worker refused the promotion: only who may write to ${key} promotes its inputs`);
    const known = await this.companion.input(key, target);
    if (known?.kind === 'steer') throw isSteer(target, known.state);
    if (known !== null) throw notPending('promoted', target, known.state);
    if (decided.refused === 'delivered') throw notPending('promoted', target, 'delivered');
    throw new GatewayError('not_found', `conversation ${key} has no input ${target}`, { id: target });
  }
}

/** The worker's steer decision on input `target`, if `event` is one. */
function steerDecisionOn(event: ConversationEvent, target: string): SteerAnswer | undefined {
  return event.type === 'steer.accepted' && event.data.input.id === target
    ? { id: target, turn: event.data.turn, landed: event.data.landed }
    : undefined;
}

/** 409: only a follow-up can be promoted; a steer was answered (or refused) as one already. */
const isSteer = (id: string, state: InputState) =>
  new GatewayError('conflict', `input ${id} was sent as a steer; only a pending follow-up (a chat) can be promoted`, { id, state, kind: 'steer' });

/** No decision in time: the promotion was sent; the status shows the input among the steers once it is one. */
const late = (id: string, target: string, seconds: number) =>
  new GatewayError(
    'unavailable',
    `the promotion ${id} of input ${target} was sent, but the worker has not decided on it within ${seconds} s; ` +
      `send it again to get its answer (an input promoted already is answered with its decision)`,
    { promote: id, target },
  );
