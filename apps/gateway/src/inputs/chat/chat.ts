import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { type ChatAccepted, ChatAcceptedAnswer, ChatBody } from '@rudder/contracts';
import { type InputOf, type Outcome, sameInput } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient, type CompanionInput, type CompanionStatus } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf } from '../../http/edge';
import { conversation, idempotencyHeaders, json, write } from '../../http/openapi';
import { type GatewayPart, route, Route, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { CONFIG } from '../../tokens';
import { Decisions } from '../../writes/decisions';
import { inputRecord, type Write, Writes } from '../../writes/submit';
import { admitMessage, messageAnswers, type MessageBody, type MessageRequest } from '../message';

/**
 * The chat input kind as the gateway takes it, in one module: its route entries (`CHAT_ROUTES`:
 * they route the controller and write the OpenAPI document), its handler (it builds the
 * record and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`CHAT`).
 */
export const CHAT_ROUTES = {
  chat: route('post', '/v1/conversations/{key}/chat', 'Enqueue a follow-up (`text`, or `messages` answered by one reply)', {
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(ChatBody.meta({ id: 'ChatBody' })) },
    responses: write(202, 'accepted by the worker', ChatAcceptedAnswer, [
      'unknown_agent',
      'conflict',
      'agent_mismatch',
      'precondition_failed',
      'text_too_long',
      'id_reused',
      'refused',
      'queue_full',
      'guard_failed',
    ]),
  }),
} satisfies Routes;

/** A chat's texts: `messages`, or `text` alone. */
const CHAT_BODY: MessageBody<ChatBody> = {
  schema: ChatBody,
  what: 'chat body',
  texts: (body) => (body.messages ?? [body.text ?? '']).map((text, index) => [body.messages === undefined ? 'text' : `messages.${index}`, text] as const),
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

  async accept(request: MessageRequest): Promise<ChatAccepted> {
    const { body, sender, idFromClient } = await admitMessage(request, CHAT_BODY, this.config.MAX_TEXT_CHARS, this.access);
    const input = inputRecord('chat', sender, {
      messages: body.messages ?? [body.text ?? ''],
      onBusy: body.onBusy ?? 'enqueue',
      ...(body.ifLastInputId === undefined ? {} : { ifLastInputId: body.ifLastInputId }),
      ...(body.agent === undefined ? {} : { agent: body.agent }),
      ...(body.queue === undefined ? {} : { queue: body.queue }),
    });
    return this.writes.submit(input, this.write(idFromClient));
  }

  /**
   * How a chat is submitted (`Writes.submit`): its id known before (`idFromClient`: the same
   * input again is answered as before, nothing sent), its answer, refusal and lateness. Other
   * doors submit their chats with it (`Inputs.message`).
   */
  write(idFromClient: boolean): Write<'chat', ChatAccepted> {
    return {
      ...messageAnswers('chat', this.decisions),
      // The same id again is the same input: answered as it was, never enqueued twice. The
      // companion lags agent.inputs slightly, so two retries racing each other may both get
      // past it and both produce; the worker answers an id once, and both get that answer.
      known: async (input) => (idFromClient ? this.again(input, await this.companion.input(input.conversation, input.id)) : undefined),
      answered: ({ ahead }, input) => ({ id: input.id, turn: null, position: ahead }),
      reused: (input) => reused(input.id),
    };
  }

  /** A chat id the companion knows: the same answer as the first time (202, or its refusal), nothing produced. */
  private async again(input: InputOf<'chat'>, earlier: CompanionInput | null): Promise<Outcome<'chat'> | 'sent' | undefined> {
    if (earlier === null) return undefined;
    if (!sameInput(earlier, input)) throw reused(earlier.id);
    if (earlier.state !== 'rejected') return { answer: { ahead: positionOf(earlier.id, await this.access.status(input.conversation)) } };
    return earlier.rejection ? { refusal: { code: earlier.rejection.code, message: earlier.rejection.message } } : 'sent';
  }
}

const reused = (id: string) => new GatewayError('id_reused', `input ${id} was sent before with other text; use a new id`);

/**
 * `position` of an input sent again: how many are ahead of it now — its place in the queue
 * (plus the running turn), or 0 once it is no longer pending (running or answered).
 */
export function positionOf(id: string, status: CompanionStatus | null): number {
  const index = status?.queue.findIndex((item) => item.id === id) ?? -1;
  if (status === null || index < 0) return 0;
  return index + (status.running === null ? 0 : 1);
}

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class ChatController {
  constructor(@Inject(ChatHandler) private readonly handler: ChatHandler) {}

  /** 202 `{id, turn: null, position}`: the input is on agent.inputs and will be answered in order. */
  @Route(CHAT_ROUTES.chat)
  chat(
    @Param('key') key: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<ChatAccepted> {
    return this.handler.accept({ key: conversationKeyOf(key), subject, body, idempotencyKey });
  }
}

/** The chat input kind: its routes, controller and handler, as one part of the gateway. */
export const CHAT: GatewayPart = { routes: CHAT_ROUTES, controllers: [ChatController], providers: [ChatHandler] };
