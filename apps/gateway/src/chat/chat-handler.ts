import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ChatBody, type ChatAccepted } from '@rudder/contracts';
import type { InputOf, Outcome } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient, type CompanionInput, type CompanionStatus } from '../companion/companion-client';
import { Decisions } from '../writes/decisions';
import { sameMessages } from '../writes/same-input';
import { checkTextLength, clientIdOf, parseEdge, requireJsonBody } from '../http/edge';
import { GatewayError } from '../errors/gateway-error';
import { CONFIG } from '../tokens';
import { inputRecord, Writes, type Write } from '../writes/submit';

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
 * `POST /v1/conversations/{key}/chat`: validates the input, settles its id, and submits it
 * (`Writes.submit`): answered once the worker has decided on it (`input.accepted` → 202 with
 * the place it gave; `input.rejected` → 409/412/429; see the chat's receipt). Everything that
 * can refuse the request up front (bad input, 401/403, a reused id, the companion away) runs
 * before the one produce, so such a request never leaves a record behind. A new chat in open
 * development mode asks the companion nothing: the produce and the worker's decision are its
 * whole path.
 */
@Injectable()
export class ChatHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
    @Inject(Decisions) private readonly decisions: Decisions,
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
    await this.access.mayWrite(request.key, request.subject);
    const input = inputRecord('chat', { id: clientId ?? randomUUID(), key: request.key, subject: request.subject }, {
      messages,
      onBusy: body.onBusy ?? 'enqueue',
      ...(body.ifLastInputId === undefined ? {} : { ifLastInputId: body.ifLastInputId }),
      ...(body.agent === undefined ? {} : { agent: body.agent }),
    });
    return this.writes.submit(input, this.write(clientId !== undefined));
  }

  /**
   * How a chat is submitted (`Writes.submit`): its id known before (`idFromClient`: the same
   * input again is answered as before, nothing sent), its answer, refusal and lateness. The
   * Responses door submits its creates with it.
   */
  write(idFromClient: boolean): Write<'chat', ChatAccepted> {
    return {
      // The same id again is the same input: answered as it was, never enqueued twice. The
      // companion lags agent.inputs slightly, so two retries racing each other may both get
      // past it and both produce; the worker answers an id once, and both get that answer.
      known: async (input) => (idFromClient ? this.again(input, await this.companion.input(input.conversation, input.id)) : undefined),
      answered: ({ ahead }, input) => ({ id: input.id, turn: null, position: ahead }),
      refused: (rejection, input) => this.decisions.rejected(input.conversation, { id: input.id, kind: 'chat' }, rejection),
      late: (input, seconds) => late(input.id, seconds),
      reused: (input) => reused(input.id),
    };
  }

  /** A chat id the companion knows: the same answer as the first time (202, or its refusal), nothing produced. */
  private async again(input: InputOf<'chat'>, earlier: CompanionInput | null): Promise<Outcome<'chat'> | 'sent' | undefined> {
    if (earlier === null) return undefined;
    if (!sameMessages(earlier, input.messages)) throw reused(earlier.id);
    if (earlier.state !== 'rejected') return { answer: { ahead: positionOf(earlier.id, await this.access.status(input.conversation)) } };
    return earlier.rejection ? { refusal: { code: earlier.rejection.code, message: earlier.rejection.message } } : 'sent';
  }
}

const reused = (id: string) => new GatewayError('id_reused', `input ${id} was sent before with other text; use a new id`);

/** No decision in time: the chat was sent, and the same id again gets its answer without sending it twice. */
const late = (id: string, seconds: number) =>
  new GatewayError(
    'unavailable',
    `chat ${id} was sent, but the worker has not decided on it within ${seconds} s; ` +
      `retry with the same id (${id}) to get its answer: it will not be sent twice`,
    { id },
  );

/**
 * `position` of an input sent again: how many are ahead of it now — its place in the queue
 * (plus the running turn), or 0 once it is no longer pending (running or answered).
 */
export function positionOf(id: string, status: CompanionStatus | null): number {
  const index = status?.queue.findIndex((item) => item.id === id) ?? -1;
  if (status === null || index < 0) return 0;
  return index + (status.running === null ? 0 : 1);
}
