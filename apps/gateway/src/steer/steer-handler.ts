import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SteerBody, type SteerAnswer, type SteerInput } from '@rudder/contracts';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient, type CompanionInput } from '../companion-client';
import { checkTextLength, clientIdOf, parseEdge, requireJsonBody } from '../edge';
import { GatewayError } from '../errors/gateway-error';
import { LiveEvents } from '../events/live-events';
import { InputsPublisher } from '../inputs-publisher';
import { CONFIG, DEFAULT_STEER_DECISION_TIMEOUT_MS, OPTIONS, type GatewayOptions } from '../tokens';

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
 * `POST /v1/conversations/{key}/steer`: validates the message like a chat, produces it to
 * `agent.inputs` at most once per request, and answers the worker's decision on it
 * (`steer.accepted`: the turn that will take it and whether it lands there).
 *
 * Order: every check that can refuse the request (400/413, 401/403, a reused id) runs before
 * the one produce. The wait for the decision starts before the companion is asked about the
 * id and before anything is produced, so a decision made in between is not missed.
 */
@Injectable()
export class SteerHandler {
  private readonly timeoutMs: number;

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(LiveEvents) private readonly live: LiveEvents,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(OPTIONS) options: GatewayOptions,
  ) {
    this.timeoutMs = options.steerDecisionTimeoutMs ?? DEFAULT_STEER_DECISION_TIMEOUT_MS;
  }

  async steer(request: SteerRequest): Promise<SteerAnswer> {
    requireJsonBody(request.body);
    const body = parseEdge(SteerBody, request.body, 'steer body');
    checkTextLength(body.text, 'text', this.config.MAX_TEXT_CHARS);
    const clientId = clientIdOf(body.id, request.idempotencyKey);
    const id = clientId ?? randomUUID();

    await this.access.require(request.key, request.subject, 'write');

    const decision = this.live.watch(request.key, (event): SteerAnswer | undefined =>
      event.type === 'steer.accepted' && event.data.input.id === id
        ? { id, turn: event.data.turn, landed: event.data.landed }
        : undefined,
    );
    try {
      // A new id (ours, or one the companion has not seen) is produced; the worker dedupes
      // ids, so a retry racing the companion's lag is still answered once.
      const earlier = clientId === undefined ? null : await this.companion.input(request.key, id);
      if (earlier === null) {
        await this.publisher.publish(this.inputOf(request, id, body.text));
      } else {
        if (!isSameSteer(earlier, body.text)) {
          throw new GatewayError('id_reused', `input ${id} was sent before as another ${earlier.kind ?? 'input'} or with other text; use a new id`);
        }
        // The same steer again: the worker has it, so nothing is produced; its decision is
        // stored, or on its way.
        const known = earlier.steer ?? (earlier.steer === undefined ? await this.storedDecision(request.key, id) : null);
        if (known) return { id, turn: known.turn, landed: known.landed };
      }
      return await this.within(decision.result, id);
    } finally {
      decision.cancel();
    }
  }

  private inputOf(request: SteerRequest, id: string, text: string): SteerInput {
    return { v: 1, type: 'steer', id, conversation: request.key, subject: request.subject, text, sentAt: new Date().toISOString() };
  }

  /**
   * For a companion that does not report decisions on its input view: the `steer.accepted`
   * event among the conversation's stored events, if the worker made one.
   */
  private async storedDecision(key: string, id: string): Promise<SteerAnswer | null> {
    const events = await this.companion.eventsAfter(key, -1);
    const found = events.find((event) => event.type === 'steer.accepted' && event.data.input.id === id);
    return found?.type === 'steer.accepted' ? { id, turn: found.data.turn, landed: found.data.landed } : null;
  }

  /** The decision, or 503 once the wait is over: the steer was sent, and the same id again gets its answer. */
  private async within(decision: Promise<SteerAnswer>, id: string): Promise<SteerAnswer> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const seconds = Math.round(this.timeoutMs / 100) / 10;
        reject(
          new GatewayError(
            'unavailable',
            `steer ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
              `retry with the same id (${id}) to get its answer: it will not be sent twice`,
            { id },
          ),
        );
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([decision, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The same steer again: a steer with this text. A chat under the id, or other text, is another input. */
function isSameSteer(earlier: CompanionInput, text: string): boolean {
  if (earlier.kind !== undefined && earlier.kind !== 'steer') return false;
  if (earlier.messages !== undefined && (earlier.messages.length !== 1 || earlier.messages[0] !== text)) return false;
  return earlier.text === undefined || earlier.text === text;
}
