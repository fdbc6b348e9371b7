import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ChatBody, inputText, type ChatAccepted, type ChatInput, type ConversationEvent } from '@rudder/contracts';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient, type CompanionInput, type CompanionStatus, type Rejection } from '../companion-client';
import { Decisions, refusedText } from '../decisions';
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
 * The worker's decision on a chat: taken into the log (with its place), refused, or (another
 * input under the id) not this chat's; or none, its guard having failed (`guardFailed`: its reason).
 */
type ChatDecision = { accepted: { ahead: number } } | { rejection: Rejection } | { reused: true } | { guardFailed: string };

/**
 * `POST /v1/conversations/{key}/chat`: validates the input, settles its id, enqueues it on
 * `agent.inputs` at most once per request and answers once the worker has decided on it
 * (`input.accepted` → 202 with the place it gave; `input.rejected` → 409/412/429). Everything
 * that can refuse the request up front (bad input, 401/403, a reused id, the companion away)
 * runs before the one produce, so such a request never leaves a record behind. The wait for
 * the decision starts before the companion is asked about the id and before anything is
 * produced. A new chat in open development mode asks the companion nothing: the produce and
 * the worker's decision are its whole path.
 */
@Injectable()
export class ChatHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
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
    const id = clientId ?? randomUUID();

    await this.access.mayWrite(request.key, request.subject);

    const decision = this.decisions.watch(request.key, [id], (event, live) => decisionOn(event, id, messages, live));
    try {
      // The same id again is the same input: answered as it was, never enqueued twice. The
      // companion lags agent.inputs slightly, so two retries racing each other may both get
      // past it and both produce; the worker answers an id once, and both get that answer.
      const earlier = clientId === undefined ? null : await this.companion.input(request.key, id);
      if (earlier !== null) return await this.again(request.key, earlier, messages, decision.result);

      const input: ChatInput = {
        v: 1,
        type: 'chat',
        id,
        conversation: request.key,
        subject: request.subject,
        messages,
        onBusy: body.onBusy ?? 'enqueue',
        ...(body.ifLastInputId === undefined ? {} : { ifLastInputId: body.ifLastInputId }),
        ...(body.agent === undefined ? {} : { agent: body.agent }),
        sentAt: new Date().toISOString(),
      };
      // Decided in the last minute (a retry racing the companion's lag): nothing to send again.
      if (decision.seen === undefined) await this.publisher.publish(input);
      const decided = await this.decisions.within(decision.result, (seconds) => late(id, seconds));
      return await this.answer(request.key, id, decided);
    } finally {
      decision.cancel();
    }
  }

  /** A chat id the companion knows: the same answer as the first time (202, or its refusal), nothing produced. */
  private async again(
    key: string,
    earlier: CompanionInput,
    messages: string[],
    decision: Promise<ChatDecision>,
  ): Promise<ChatAccepted> {
    if (!sameMessages(earlier, messages)) throw reused(earlier.id);
    if (earlier.state !== 'rejected') return { id: earlier.id, turn: null, position: positionOf(earlier.id, await this.access.status(key)) };
    const { rejection } = earlier;
    const decided: ChatDecision = rejection
      ? { rejection: { code: rejection.code, message: rejection.message } }
      : await this.decisions.within(decision, (seconds) => late(earlier.id, seconds));
    return this.answer(key, earlier.id, decided);
  }

  private async answer(key: string, id: string, decided: ChatDecision): Promise<ChatAccepted> {
    if ('reused' in decided) throw reused(id);
    if ('rejection' in decided) throw await this.decisions.rejected(key, { id, kind: 'chat' }, decided.rejection);
    if ('guardFailed' in decided) throw this.decisions.guardFailed({ id, kind: 'chat' }, decided.guardFailed);
    return { id, turn: null, position: decided.accepted.ahead };
  }
}

/**
 * The worker's decision on the chat `id` with these messages, if `event` is one. A guard that
 * failed answers only a send it follows (`live`): a recent one answered an earlier send.
 */
function decisionOn(event: ConversationEvent, id: string, messages: string[], live: boolean): ChatDecision | undefined {
  if (event.type === 'guard.failed' && event.data.input.id === id) {
    if (!live) return undefined;
    return event.data.input.kind === 'chat' ? { guardFailed: event.data.message } : { reused: true };
  }
  if (event.type === 'input.accepted' && event.data.input.id === id) {
    const same = event.data.input.kind === 'chat' && sameList(event.data.input.messages, messages);
    // `ahead` is absent only on events stored before the worker recorded it.
    return same ? { accepted: { ahead: event.data.ahead ?? 0 } } : { reused: true };
  }
  if (event.type === 'input.rejected' && event.data.input.id === id) {
    const same = event.data.input.kind === 'chat' && refusedText(event.data.input, inputText(messages));
    return same ? { rejection: { code: event.data.code, message: event.data.message } } : { reused: true };
  }
  return undefined;
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

/** The same chat again: a steer (or any other kind) under this id is another input. */
function sameMessages(earlier: CompanionInput, messages: string[]): boolean {
  if (earlier.kind !== 'chat') return false;
  // A refusal keeps only the digest of the messages joined (`input.rejected`).
  if (earlier.state === 'rejected') return refusedText(earlier, inputText(messages));
  if (earlier.messages !== undefined) return sameList(earlier.messages, messages);
  return earlier.text === inputText(messages);
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((text, i) => text === b[i]);
