import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SteerBody, type ConversationEvent, type SteerAnswer, type SteerInput } from '@rudder/contracts';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient, type CompanionInput, type Rejection } from '../companion-client';
import { Decisions, refusedText } from '../decisions';
import { checkTextLength, clientIdOf, parseEdge, requireJsonBody } from '../edge';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from '../inputs-publisher';
import { CONFIG } from '../tokens';

export type SteerRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body. */
  body: unknown;
  /** The `Idempotency-Key` header, unvalidated. */
  idempotencyKey: string | undefined;
};

/** The worker's decision on a steer: where it goes (`steer.accepted`), its refusal (`input.rejected`), or (another input under the id) not this steer's. */
type SteerDecision = { answer: SteerAnswer } | { rejection: Rejection } | { reused: true } | { guardFailed: string };

/**
 * `POST /v1/conversations/{key}/steer`: validates the message like a chat, produces it to
 * `agent.inputs` at most once per request, and answers the worker's decision on it
 * (`steer.accepted`: the turn that will take it and whether it lands there; `input.rejected`:
 * 412/429).
 *
 * Order: every check that can refuse the request (400/413, 401/403, a reused id) runs before
 * the one produce. The wait for the decision starts before the companion is asked about the
 * id and before anything is produced, so a decision made in between is not missed.
 */
@Injectable()
export class SteerHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(Decisions) private readonly decisions: Decisions,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async steer(request: SteerRequest): Promise<SteerAnswer> {
    requireJsonBody(request.body);
    const body = parseEdge(SteerBody, request.body, 'steer body');
    checkTextLength(body.text, 'text', this.config.MAX_TEXT_CHARS);
    const clientId = clientIdOf(body.id, request.idempotencyKey);
    const id = clientId ?? randomUUID();

    await this.access.mayWrite(request.key, request.subject);

    const decision = this.decisions.watch(request.key, [id], (event, live) => decisionOn(event, id, body.text, live));
    try {
      // A new id (ours, or one the companion has not seen) is produced; the worker dedupes
      // ids, so a retry racing the companion's lag is still answered once.
      const earlier = clientId === undefined ? null : await this.companion.input(request.key, id);
      let decided: SteerDecision | undefined;
      if (earlier === null) {
        // Decided in the last minute (a retry racing the companion's lag): nothing to send again.
        if (decision.seen === undefined) await this.publisher.publish(this.inputOf(request, id, body));
      } else {
        if (!isSameSteer(earlier, body.text)) throw reused(id, earlier.kind);
        // The same steer again: the worker has it, so nothing is produced; its decision is
        // stored, or on its way.
        decided = await this.known(request.key, earlier);
      }
      decided ??= await this.decisions.within(decision.result, (seconds) => late(id, seconds));
      return await this.answer(request.key, id, decided);
    } finally {
      decision.cancel();
    }
  }

  private inputOf(request: SteerRequest, id: string, body: SteerBody): SteerInput {
    return {
      v: 1,
      type: 'steer',
      id,
      conversation: request.key,
      subject: request.subject,
      text: body.text,
      ...(body.ifLastInputId === undefined ? {} : { ifLastInputId: body.ifLastInputId }),
      sentAt: new Date().toISOString(),
    };
  }

  /** The decision on a steer the companion knows, if it has one: its input view's `steer`, or its `rejection`. */
  private async known(_key: string, earlier: CompanionInput): Promise<SteerDecision | undefined> {
    if (earlier.state === 'rejected' && earlier.rejection) return { rejection: earlier.rejection };
    if (earlier.steer) return { answer: { id: earlier.id, turn: earlier.steer.turn, landed: earlier.steer.landed } };
    return undefined;
  }

  private async answer(key: string, id: string, decided: SteerDecision): Promise<SteerAnswer> {
    if ('reused' in decided) throw reused(id);
    if ('rejection' in decided) throw await this.decisions.rejected(key, { id, kind: 'steer' }, decided.rejection);
    if ('guardFailed' in decided) throw this.decisions.guardFailed({ id, kind: 'steer' }, decided.guardFailed);
    return decided.answer;
  }
}

/**
 * The worker's decision on the steer `id` with this text, if `event` is one. The log may hold
 * another input under the id (a chat, or a steer with other text, sent before the companion
 * showed it): that is not this steer's decision, and the id is reused (422), as it is once the
 * companion shows the first input.
 */
function decisionOn(event: ConversationEvent, id: string, text: string, live: boolean): SteerDecision | undefined {
  // A guard that failed answers only a send it follows (`live`): a recent one answered an earlier send.
  if (event.type === 'guard.failed' && event.data.input.id === id) {
    if (!live) return undefined;
    return event.data.input.kind === 'steer' ? { guardFailed: event.data.message } : { reused: true };
  }
  if (event.type === 'input.accepted' && event.data.input.id === id) {
    // This steer's acceptance: its decision is the steer.accepted that follows it.
    return event.data.input.kind === 'steer' && event.data.input.text === text ? undefined : { reused: true };
  }
  if (event.type === 'steer.accepted' && event.data.input.id === id) {
    return event.data.input.text === text ? { answer: { id, turn: event.data.turn, landed: event.data.landed } } : { reused: true };
  }
  if (event.type === 'input.rejected' && event.data.input.id === id) {
    const same = event.data.input.kind === 'steer' && refusedText(event.data.input, text);
    return same ? { rejection: { code: event.data.code, message: event.data.message } } : { reused: true };
  }
  return undefined;
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

/** The same steer again: a steer with this text. A chat under the id, or other text, is another input. */
function isSameSteer(earlier: CompanionInput, text: string): boolean {
  if (earlier.kind !== undefined && earlier.kind !== 'steer') return false;
  // A refusal keeps only the digest of its text (`input.rejected`).
  if (earlier.state === 'rejected') return refusedText(earlier, text);
  if (earlier.messages !== undefined && (earlier.messages.length !== 1 || earlier.messages[0] !== text)) return false;
  return earlier.text === undefined || earlier.text === text;
}
