import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ChatBody, inputText, type ChatAccepted, type ChatInput } from '@rudder/contracts';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient, type CompanionInput, type CompanionStatus } from '../companion-client';
import { checkTextLength, clientIdOf, parseEdge, requireJsonBody } from '../edge';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from '../inputs-publisher';
import { CONFIG } from '../tokens';

export type ChatRequest = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** The parsed JSON body, unvalidated; undefined when the request had no JSON body. */
  body: unknown;
  /** The `Idempotency-Key` header, unvalidated. */
  idempotencyKey: string | undefined;
};

/**
 * `POST /v1/conversations/{key}/chat`: validates the input, settles its id and enqueues it
 * on `agent.inputs` at most once per id. Everything that can refuse the request (bad input,
 * 401/403, a reused id, the companion away) runs before the one produce, so a refused request
 * never leaves a record behind.
 */
@Injectable()
export class ChatHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async accept(request: ChatRequest): Promise<ChatAccepted> {
    requireJsonBody(request.body);
    const body = parseEdge(ChatBody, request.body, 'chat body');
    const messages = body.messages ?? [body.text ?? ''];
    messages.forEach((text, index) =>
      checkTextLength(text, body.messages === undefined ? 'text' : `messages.${index}`, this.config.MAX_TEXT_CHARS),
    );
    const clientId = clientIdOf(body.id, request.idempotencyKey);

    const status = await this.access.require(request.key, request.subject, 'write');

    if (clientId !== undefined) {
      // The same id again is the same input: answered again, never enqueued twice. The
      // companion lags agent.inputs slightly, so two retries racing each other may both get
      // here and both produce; the worker's unique key on the input id answers it once.
      const earlier = await this.companion.input(request.key, clientId);
      if (earlier !== null) {
        if (!sameMessages(earlier, messages)) {
          throw new GatewayError('id_reused', `input ${clientId} was sent before with other text; use a new id`);
        }
        return { id: clientId, turn: null, position: positionOf(clientId, status) };
      }
    }

    const input: ChatInput = {
      v: 1,
      type: 'chat',
      id: clientId ?? randomUUID(),
      conversation: request.key,
      subject: request.subject,
      messages,
      sentAt: new Date().toISOString(),
    };
    await this.publisher.publish(input);
    return { id: input.id, turn: null, position: inputsAhead(status) };
  }
}

/**
 * `position` of a new input: how many inputs are ahead of it in the companion's status at
 * acceptance — the pending follow-ups plus the running turn, if any. 0 means it starts next.
 * The companion lags agent.inputs a little, so under a burst this is a lower bound.
 */
export function inputsAhead(status: CompanionStatus | null): number {
  if (status === null) return 0;
  return status.queue.length + (status.running === null ? 0 : 1);
}

/**
 * `position` of an input sent again: how many are ahead of it now — its place in the queue
 * (plus the running turn), or 0 once it is no longer pending (running or answered).
 */
export function positionOf(id: string, status: CompanionStatus | null): number {
  const index = status?.queue.findIndex((item) => item.id === id) ?? -1;
  if (status === null || index < 0) return 0;
  return index + (status.running === null ? 0 : 1);
}

/** The same chat again: a steer (or any other kind) under this id is another input. */
function sameMessages(earlier: CompanionInput, messages: string[]): boolean {
  if (earlier.kind !== undefined && earlier.kind !== 'chat') return false;
  if (earlier.messages !== undefined) {
    return earlier.messages.length === messages.length && earlier.messages.every((text, i) => text === messages[i]);
  }
  return earlier.text === inputText(messages);
}
