import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { CreateResponseBody, inputTexts, RetrieveResponseQuery, type ResponseAnswer, type StreamCursor } from '@rudder/contracts';
import { derivedConversationKey, type InputOf } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../companion/conversation-access';
import { Inputs } from '../inputs/inputs';
import { CompanionClient } from '../companion/companion-client';
import { checkTextLength, clientIdOf, conversationKeyOf, parseEdge, requireJsonBody } from '../http/edge';
import { GatewayError } from '../errors/gateway-error';
import { EventsHandler, type FollowedStream } from '../events/events-handler';
import { LiveEvents } from '../live/live-events';
import { responseSink, type StreamSink } from '../events/sse';
import { StreamBuffers } from '../events/stream-buffers';
import { CONFIG } from '../tokens';
import { inputRecord } from '../writes/submit';
import { notToBeRetried, ProtocolError } from './protocol-errors';
import { ResponseFold, sseOf, STEER_KEY, type ProtocolEvent, type ResponseRequest } from './response-fold';
import { parseResponseId } from './response-id';

/** How long a non-streaming create waits for its turn to end before it answers the response as it stands (`in_progress`, to be polled). */
export const DEFAULT_RESPONSE_WAIT_MS = 5 * 60_000;

export type CreateRequest = { subject: string; body: unknown; idempotencyKey: string | undefined; response: ServerResponse };
export type RetrieveRequest = { subject: string; id: string; query: unknown; response: ServerResponse };

/** The decision did not come within the decision timeout: the input is produced, so the create is answered as `queued`, never 503. */
class Undecided extends GatewayError {
  constructor() {
    super('unavailable', 'the worker has not decided on the input yet');
  }
}

/**
 * `/v1/responses`: the OpenAI Responses protocol as a translation of Rudder's API (see
 * docs/responses.md). A create is a chat, submitted by the gateway's one write path with the
 * chat's own rules (`Inputs.message`: the same id again is the same input); the response is
 * the turn that answers it, read from the conversation's events (`ResponseFold`) through the
 * event stream's machinery (`EventsHandler.follow`: replay, live tail, read access at each
 * event). The door keeps nothing: a response id names its conversation and input.
 */
@Injectable()
export class ResponsesHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Inputs) private readonly inputs: Inputs,
    @Inject(EventsHandler) private readonly events: EventsHandler,
    @Inject(LiveEvents) private readonly live: LiveEvents,
    @Inject(StreamBuffers) private readonly buffers: StreamBuffers,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * `POST /v1/responses`. Everything that can refuse the create runs before its one produce;
   * once the input is produced, no answer is one the client would retry by itself (a refusal
   * carries `x-should-retry: false`; a decision that is late answers the response `queued`).
   */
  async create({ subject, body: raw, idempotencyKey, response }: CreateRequest): Promise<void> {
    requireJsonBody(raw);
    const body = parseEdge(CreateResponseBody, raw, 'create body');
    const messages = inputTexts(body.input);
    messages.forEach((text, index) => checkTextLength(text, typeof body.input === 'string' ? 'input' : `input.${index}`, this.config.MAX_TEXT_CHARS));
    const clientId = clientIdOf(undefined, idempotencyKey);
    const { key, previous, derivedFrom } = await this.conversationOf(body, subject, clientId);
    // A conversation the door derives for this subject is the worker's to check, under its lock
    // (it refuses one another subject opened); any other is checked here first, as every write is.
    if (derivedFrom === undefined) await this.access.mayWrite(key, subject);
    const steer = body.metadata?.[STEER_KEY] === 'true';
    if (steer && previous === null) {
      throw new ProtocolError('bad_request', 'invalid_request', 'a steer (metadata "rudder.steer") goes into a running response: name it as previous_response_id', 'previous_response_id');
    }
    const sender = { id: clientId ?? randomUUID(), key, subject };
    // The steer extension: the message joins the running turn at its next step (a steer), and
    // lands on whatever turn runs, so it names no latest input.
    const input = steer ? inputRecord('steer', sender, { text: messages.join('\n\n') }) : inputRecord('chat', sender, {
      messages,
      onBusy: 'enqueue',
      // A follow-up of the latest response (another is a fork: `ifLastInputId`, decided by the
      // worker with the input). When that response is running, its turn winds down at its next
      // step and ends `completed`, then this one runs; when it still waits, this one queues
      // behind it (`continues`). An agent that takes no steers is not wound down: the worker
      // refuses the follow-up (`ifSteerable`).
      ...(previous === null ? {} : { continues: previous, ifLastInputId: previous, ifSteerable: true }),
      ...(derivedFrom === undefined ? {} : { derivedFrom }),
      agent: body.model,
    });
    const request: ResponseRequest = {
      model: body.model,
      background: body.background ?? false,
      metadata: body.metadata ?? {},
      previousResponseId: body.previous_response_id ?? null,
    };
    // Subscribed before the produce. A new input's events all come after what this gateway has
    // seen of the conversation; one under the client's id may be a retry of an input accepted
    // before, whose response is then read from right before its acceptance (from the
    // conversation's start while the companion does not know it).
    const after: StreamCursor = { position: clientId === undefined ? (this.live.latestPosition(key) ?? 0) : await this.before(key, input.id), tokenOffset: null };
    const fold = new ResponseFold(key, input.id, request);
    // A streamed create streams, in the background too (the turn runs on when the client goes).
    if (body.stream) return this.submitAndFollow(input, clientId !== undefined, this.streamTo(response, fold, after, subject, null));
    if (body.background) {
      await this.submit(input, clientId !== undefined);
      // Produced: answered as it stands, or as queued when the read side cannot say (never a retryable 503).
      const found = await this.read(key, input.id, request, after.position).catch(() => fold);
      return json(response, found.unseen ? fold.answer() : found.answer());
    }
    const collecting = this.collect(fold, after, subject);
    // A client gone before the answer: nothing is followed for it any more (the input stays produced).
    response.on('close', collecting.close);
    await this.submitAndFollow(input, clientId !== undefined, collecting);
    json(response, await collecting.answer);
  }

  /** Submits the input, then starts following its response (subscribed before the produce, so nothing of it is missed). */
  private async submitAndFollow(input: InputOf<'chat'> | InputOf<'steer'>, idFromClient: boolean, follow: FollowedStream): Promise<void> {
    try {
      await this.submit(input, idFromClient);
    } catch (error) {
      follow.close();
      throw error;
    }
    await follow.start().catch((error: unknown) => {
      throw notToBeRetried(error);
    });
  }

  /** `GET /v1/responses/{id}` (`?stream=true&starting_after=N`: its stream from the start, without the events up to N). */
  async retrieve({ subject, id, query, response }: RetrieveRequest): Promise<void> {
    const { stream, starting_after } = parseEdge(RetrieveResponseQuery, query, 'query');
    const { key, input, request } = await this.readable(id, subject);
    const known = await this.companion.inputOrPosition(key, input);
    const from = startOf(known);
    if (stream !== 'true') return json(response, (await this.found(key, input, request, from)).answer());
    // An input the companion knows was accepted is a response; one it does not know (yet), or knows refused, is looked for in the events (404 when none is there).
    if ('unseenUpTo' in known || known.state === 'rejected') await this.found(key, input, request, from);
    const fold = new ResponseFold(key, input, request);
    const follow = this.streamTo(response, fold, { position: from, tokenOffset: null }, subject, starting_after === undefined ? null : Number(starting_after));
    await follow.start();
  }

  /**
   * `POST /v1/responses/{id}/cancel`: a response still waiting is taken back (a retraction), a
   * running one is stopped (a stop of its turn); answered once it ended (`cancelled`). A
   * response that has ended is answered as it is: cancelling is idempotent. Needs `write`, as
   * a stop does.
   */
  async cancel({ subject, id, response }: Omit<RetrieveRequest, 'query'>): Promise<void> {
    const { key, input, request } = await this.readable(id, subject);
    await this.access.mayWrite(key, subject);
    const from = await this.before(key, input);
    let fold = await this.found(key, input, request, from);
    if (fold.queued) {
      // Refused (409) when its turn started meanwhile: then that turn is stopped below.
      await this.inputs.retract({ key, subject, target: { id: input } }).catch((error: unknown) => {
        if (!(error instanceof GatewayError && error.code === 'conflict')) throw error;
      });
      fold = await this.read(key, input, request, from);
    }
    const turn = fold.turnId;
    if (!fold.ended && turn !== null) await this.inputs.stop({ key, subject, body: { turn } });
    const ended = this.collect(new ResponseFold(key, input, request), { position: from, tokenOffset: null }, subject);
    await ended.start();
    json(response, await ended.answer);
  }

  private async submit(input: InputOf<'chat'> | InputOf<'steer'>, idFromClient: boolean): Promise<void> {
    try {
      await this.inputs.message(input, idFromClient, () => new Undecided());
    } catch (error) {
      if (error instanceof Undecided) return;
      throw notToBeRetried(protocolRefusal(error));
    }
  }

  /**
   * The conversation a create continues (and the previous response's input), or a new one: a key
   * derived for the subject from the `Idempotency-Key` (a retry finds it again) or from a fresh
   * nonce, which the input carries (`derivedFrom`) so the worker can check the derivation.
   */
  private async conversationOf(
    body: CreateResponseBody,
    subject: string,
    clientId: string | undefined,
  ): Promise<{ key: string; previous: string | null; derivedFrom?: string }> {
    if (body.previous_response_id != null) {
      const previous = parseResponseId(body.previous_response_id);
      const unknown = () =>
        new ProtocolError('bad_request', 'previous_response_not_found', `previous response ${body.previous_response_id} not found`, 'previous_response_id');
      if (previous === null) throw unknown();
      await this.access.readable(previous.key, subject).catch((error: unknown) => {
        throw error instanceof GatewayError && error.code === 'not_found' ? unknown() : error;
      });
      if ((await this.companion.input(previous.key, previous.input)) === null) throw unknown();
      return { key: previous.key, previous: previous.input };
    }
    if (body.conversation != null) {
      const key = conversationKeyOf(typeof body.conversation === 'string' ? body.conversation : body.conversation.id);
      return { key, previous: null };
    }
    const derivedFrom = clientId ?? randomUUID();
    return { key: derivedConversationKey(subject, derivedFrom), previous: null, derivedFrom };
  }

  /** The conversation and input of a response `subject` may read: 404 for an id that names none, 403 for another's. */
  /**
   * The response `id` names, when `subject` may read its conversation; and the request it is read
   * as: its model is the conversation's agent (its events are read from its input on, after the
   * conversation's opening that names the agent).
   */
  private async readable(id: string, subject: string): Promise<{ key: string; input: string; request: ResponseRequest }> {
    const parsed = parseResponseId(id);
    const missing = () => new ProtocolError('not_found', 'not_found', `response ${id} not found`);
    if (parsed === null) throw missing();
    const status = await this.access.readable(parsed.key, subject).catch((error: unknown) => {
      throw error instanceof GatewayError && error.code === 'not_found' ? missing() : error;
    });
    return { ...parsed, request: { model: status.agent ?? '' } };
  }

  /**
   * Where a response's events begin: right before its input's acceptance, which the companion
   * knows by its id; where the companion's view was without it when it does not (yet). So
   * reading a response costs what comes after its input, not the conversation's length before
   * it, for an id that names no input too.
   */
  private async before(key: string, input: string): Promise<number> {
    return startOf(await this.companion.inputOrPosition(key, input));
  }

  private async found(key: string, input: string, request: ResponseRequest, from: number): Promise<ResponseFold> {
    const fold = await this.read(key, input, request, from);
    if (fold.unseen) throw new ProtocolError('not_found', 'not_found', `response ${fold.id} not found`);
    return fold;
  }

  /**
   * The response folded from the conversation's stored events, as far as this gateway has seen
   * them at least (its writes, and what its streams carried: a retrieve after a stream ended
   * reads the end the stream sent).
   */
  private async read(key: string, input: string, request: ResponseRequest, from: number): Promise<ResponseFold> {
    const fold = new ResponseFold(key, input, request);
    for await (const page of this.companion.eventPages(key, from, this.live.latestPosition(key) ?? 0)) {
      for (const event of page) fold.see(event);
      if (fold.ended) break;
    }
    return fold;
  }

  /**
   * The response's stream on the HTTP response: the protocol's events (their SSE event names
   * the protocol's types, keep-alives comment lines), from `response.created` to its one
   * terminal event, then the response ends. `startingAfter`: the events up to it are not sent.
   */
  private streamTo(response: ServerResponse, fold: ResponseFold, after: StreamCursor, subject: string, startingAfter: number | null) {
    const sink = responseSink(response, this.buffers.capOf(fold.key));
    const ending: StreamSink = {
      open: sink.open,
      drained: sink.drained,
      end: sink.end,
      write: (chunk) => {
        sink.write(chunk);
        if (fold.ended) sink.end();
      },
    };
    const write = (events: ProtocolEvent[]) =>
      events
        .filter((event) => startingAfter === null || event.sequence_number > startingAfter)
        .map(sseOf)
        .join('');
    const follow = this.events.follow({
      key: fold.key,
      subject,
      after,
      sink: ending,
      format: {
        event: (event) => {
          if (fold.ended) return '';
          const chunk = write(fold.see(event));
          // Its end sent before (`starting_after` past it): nothing to write, and the stream ends all the same.
          if (fold.ended && chunk === '') sink.end();
          return chunk;
        },
        token: () => '',
      },
    });
    response.on('close', follow.close);
    return follow;
  }

  /** A non-streaming create: the response once it ended (or as it stands after `DEFAULT_RESPONSE_WAIT_MS`). */
  private collect(fold: ResponseFold, after: StreamCursor, subject: string): Collecting {
    let done: (answer: ResponseAnswer) => void = () => undefined;
    const answer = new Promise<ResponseAnswer>((resolve) => (done = resolve));
    const follow = this.events.follow({
      key: fold.key,
      subject,
      after,
      sink: { open: () => undefined, write: () => undefined, end: () => done(fold.answer()) },
      format: {
        event: (event) => {
          if (!fold.ended) fold.see(event);
          if (fold.ended) done(fold.answer());
          return '';
        },
        token: () => '',
      },
    });
    const timer = setTimeout(() => done(fold.answer()), DEFAULT_RESPONSE_WAIT_MS);
    void answer.finally(() => {
      clearTimeout(timer);
      follow.close();
    });
    return { ...follow, answer };
  }
}

type Collecting = FollowedStream & { answer: Promise<ResponseAnswer> };

function json(response: ServerResponse, body: ResponseAnswer): void {
  response.statusCode = 200;
  response.setHeader('content-type', 'application/json; charset=utf-8');
  response.end(JSON.stringify(body));
}

/** The worker's refusals of a create, in the protocol's words where it has its own. */
function protocolRefusal(error: unknown): unknown {
  if (!(error instanceof GatewayError)) return error;
  if (error.code === 'precondition_failed') {
    return new ProtocolError(
      'conflict',
      'conversation_fork_not_supported',
      'previous_response_id is not the latest response of its conversation: a conversation does not fork; continue from its latest response',
      'previous_response_id',
    );
  }
  // The door never sends onBusy reject: a busy refusal is `ifSteerable`'s.
  if (error.code === 'conflict') {
    return new ProtocolError(
      'conflict',
      'conversation_locked',
      'the response is still running and its agent takes no steers, so it is not wound down for a follow-up: send it once the response has ended',
      'previous_response_id',
    );
  }
  if (error.code === 'unknown_agent') return new ProtocolError('unknown_agent', 'model_not_found', error.message, 'model');
  return error;
}

/** Where the events of a response begin: right before its input's acceptance, or where the companion's view was without it. */
const startOf = (known: { position?: number } | { unseenUpTo: number }): number =>
  'unseenUpTo' in known ? known.unseenUpTo : known.position === undefined ? 0 : Math.max(0, known.position - 1);
