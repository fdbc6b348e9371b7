import { createHash, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { CreateResponseBody, inputTexts, RetrieveResponseQuery, type ResponseAnswer, type StreamCursor } from '@rudder/contracts';
import { derivedConversationKey, type InputOf } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { GatewayError } from '../errors/gateway-error';
import type { FollowedStream } from '../events/events-handler';
import { checkTextLength, clientIdOf, conversationKeyOf, parseEdge, requireJsonBody } from '../http/edge';
import { Inputs } from '../inputs/inputs';
import { LiveEvents } from '../live/live-events';
import { CONFIG } from '../tokens';
import { inputRecord } from '../writes/submit';
import { NO_RETRY, notToBeRetried, ProtocolError, protocolRefusal } from './protocol-errors';
import { ResponseFold, STEER_KEY, type ResponseRequest } from './response-fold';
import { parseResponseId } from './response-id';
import { ResponseReads, startOf } from './response-reads';
import { ResponseStreams } from './response-streams';

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
 * the turn that answers it, read from the conversation's events (`ResponseFold`, `ResponseReads`)
 * through the event stream's machinery (`ResponseStreams`). The door keeps nothing: a response
 * id names its conversation and input.
 */
@Injectable()
export class ResponsesHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Inputs) private readonly inputs: Inputs,
    @Inject(ResponseReads) private readonly reads: ResponseReads,
    @Inject(ResponseStreams) private readonly streams: ResponseStreams,
    @Inject(LiveEvents) private readonly live: LiveEvents,
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
    const steer = body.metadata?.[STEER_KEY] === 'true';
    if (steer && body.previous_response_id == null) {
      throw new ProtocolError('bad_request', 'invalid_request', 'a steer (metadata "rudder.steer") goes into a running response: name it as previous_response_id', 'previous_response_id');
    }
    const create: Create = { subject, body, messages, steer, id: clientId ?? randomUUID(), idFromClient: clientId !== undefined, response };
    const into = await this.conversationOf(create);
    try {
      await this.createIn(create, into);
    } catch (error) {
      // The worker found a later response than the one continued (one came in meanwhile): the create forks.
      if (!(error instanceof NotLatest) || into.previous === null) throw error;
      await this.createIn(create, await this.forkAt(create, into.previous));
    }
  }

  /** The create's input, submitted to the conversation it goes into, and its response answered as the create asked (streamed, background, or whole). */
  private async createIn(create: Create, { key, previous, derivedFrom }: Into): Promise<void> {
    const { subject, body, messages, steer, id, idFromClient, response } = create;
    // A conversation the door derives for this subject is the worker's to check, under its lock
    // (it refuses one another subject opened); any other is checked here first, as every write is.
    if (derivedFrom === undefined) await this.access.mayWrite(key, subject);
    const sender = { id, key, subject };
    // The steer extension: the message joins the running turn at its next step (a steer), and
    // lands on whatever turn runs, so it names no latest input.
    const input = steer ? inputRecord('steer', sender, { text: messages.join('\n\n') }) : inputRecord('chat', sender, {
      messages,
      onBusy: 'enqueue',
      // A follow-up of the latest response (the worker decides it is, with the input:
      // `ifLastInputId`; else the create forks). When that response is running, its turn winds down at its next
      // step and ends `completed`, then this one runs; when it still waits, this one queues
      // behind it (`continues`). An agent that takes no steers is not wound down: the worker
      // refuses the follow-up (`ifSteerable`).
      ...(previous === null ? {} : { continues: previous.input, ifLastInputId: previous.input, ifSteerable: true }),
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
    const after: StreamCursor = { position: idFromClient ? await this.reads.before(key, input.id) : (this.live.latestPosition(key) ?? 0), tokenOffset: null };
    const fold = new ResponseFold(key, input.id, request);
    // A streamed create streams, in the background too (the turn runs on when the client goes).
    if (body.stream) return this.submitAndFollow(input, idFromClient, this.streams.streamTo(response, fold, after, subject, null));
    if (body.background) {
      await this.submit(input, idFromClient);
      // Produced: answered as it stands, or as queued when the read side cannot say (never a retryable 503).
      const found = await this.reads.read(key, input.id, request, after.position).catch(() => fold);
      return json(response, found.unseen ? fold.answer() : found.answer());
    }
    const collecting = this.streams.collect(fold, after, subject);
    // A client gone before the answer: nothing is followed for it any more (the input stays produced).
    response.on('close', collecting.close);
    await this.submitAndFollow(input, idFromClient, collecting);
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
    const { key, input, request } = await this.reads.readable(id, subject);
    const known = await this.companion.inputOrPosition(key, input);
    const from = startOf(known);
    if (stream !== 'true') return json(response, (await this.reads.found(key, input, request, from)).answer());
    // An input the companion knows was accepted is a response; one it does not know (yet), or knows refused, is looked for in the events (404 when none is there).
    if ('unseenUpTo' in known || known.state === 'rejected') await this.reads.found(key, input, request, from);
    const fold = new ResponseFold(key, input, request);
    const follow = this.streams.streamTo(response, fold, { position: from, tokenOffset: null }, subject, starting_after === undefined ? null : Number(starting_after));
    await follow.start();
  }

  /**
   * `POST /v1/responses/{id}/cancel`: a response still waiting is taken back (a retraction), a
   * running one is stopped (a stop of its turn); answered once it ended (`cancelled`). A
   * response that has ended is answered as it is: cancelling is idempotent. Needs `write`, as
   * a stop does.
   */
  async cancel({ subject, id, response }: Omit<RetrieveRequest, 'query'>): Promise<void> {
    const { key, input, request } = await this.reads.readable(id, subject);
    await this.access.mayWrite(key, subject);
    const from = await this.reads.before(key, input);
    let fold = await this.reads.found(key, input, request, from);
    if (fold.queued) {
      // Refused (409) when its turn started meanwhile: then that turn is stopped below.
      await this.inputs.retract({ key, subject, target: { id: input } }).catch((error: unknown) => {
        if (!(error instanceof GatewayError && error.code === 'conflict')) throw error;
      });
      fold = await this.reads.read(key, input, request, from);
    }
    const turn = fold.turnId;
    if (!fold.ended && turn !== null) await this.inputs.stop({ key, subject, body: { turn } });
    const ended = this.streams.collect(new ResponseFold(key, input, request), { position: from, tokenOffset: null }, subject);
    await ended.start();
    json(response, await ended.answer);
  }

  private async submit(input: InputOf<'chat'> | InputOf<'steer'>, idFromClient: boolean): Promise<void> {
    try {
      await this.inputs.message(input, idFromClient, () => new Undecided());
    } catch (error) {
      if (error instanceof Undecided) return;
      if (error instanceof GatewayError && error.code === 'precondition_failed') throw new NotLatest();
      throw notToBeRetried(protocolRefusal(error));
    }
  }

  /**
   * The conversation a create goes into. `previous_response_id`: that response's conversation
   * when it is the latest response there (the worker decides it is, with the input), when the
   * create's id is there already (a retry of a create that continued it), or for a steer; else
   * the create forks (`forkAt`). `conversation`: that one. Neither: a new one, its key derived for the
   * subject from the `Idempotency-Key` (a retry finds it again) or from a fresh nonce, which
   * the input carries (`derivedFrom`) so the worker can check the derivation.
   */
  private async conversationOf(create: Create): Promise<Into> {
    const { body, subject, id, idFromClient } = create;
    if (body.previous_response_id != null) {
      const previous = parseResponseId(body.previous_response_id);
      const unknown = () =>
        new ProtocolError('bad_request', 'previous_response_not_found', `previous response ${body.previous_response_id} not found`, 'previous_response_id');
      if (previous === null) throw unknown();
      const status = await this.access.readable(previous.key, subject).catch((error: unknown) => {
        throw error instanceof GatewayError && error.code === 'not_found' ? unknown() : error;
      });
      // The companion knows the previous input, so its `lastInputId` is that input or a later one.
      if ((await this.companion.input(previous.key, previous.input)) === null) throw unknown();
      // A steer names no latest response: it joins whatever turn runs there.
      const continued = create.steer || status.lastInputId === previous.input || (idFromClient && (await this.companion.input(previous.key, id)) !== null);
      return continued ? { key: previous.key, previous } : this.forkAt(create, previous);
    }
    if (body.conversation != null) {
      const key = conversationKeyOf(typeof body.conversation === 'string' ? body.conversation : body.conversation.id);
      return { key, previous: null };
    }
    const derivedFrom = idFromClient ? id : randomUUID();
    return { key: derivedConversationKey(subject, derivedFrom), previous: null, derivedFrom };
  }

  /**
   * A create whose previous response is not its conversation's latest forks at that response's
   * turn (once it has ended: 409 before) into a conversation of its own, whose key is derived
   * for the subject from the previous response's id and the create's id (`Idempotency-Key`):
   * the same create again forks once and finds the same conversation, and no other subject can
   * open it (the worker checks the derivation, as for a new conversation's).
   */
  private async forkAt({ body, subject, id }: Create, previous: { key: string; input: string }): Promise<Into> {
    const responseId = body.previous_response_id!;
    const fold = await this.reads.read(previous.key, previous.input, { model: '' }, await this.reads.before(previous.key, previous.input));
    if (!fold.ended) {
      throw new ProtocolError(
        'conflict',
        'previous_response_in_progress',
        `previous response ${responseId} has not ended and is not the latest response of its conversation: continue from the latest, or from this one once it has ended (a fork)`,
        'previous_response_id',
        NO_RETRY,
      );
    }
    const derivedFrom = forkNonce(responseId, id);
    const key = derivedConversationKey(subject, derivedFrom);
    const cannot = (why: string) => new ProtocolError('conflict', 'previous_response_not_forkable', `previous response ${responseId} ${why}`, 'previous_response_id', NO_RETRY);
    if (fold.turnId === null) throw cannot('was cancelled before it ran: there is no turn to fork at');
    await this.inputs.fork(inputRecord('fork', { id, key, subject }, { from: previous.key, atTurn: fold.turnId, derivedFrom })).catch((error: unknown) => {
      // Its turn rolled back since (404), or a key taken (409): nothing to retry.
      if (error instanceof GatewayError && (error.code === 'not_found' || error.code === 'conflict')) throw cannot(`cannot be forked: ${error.message}`);
      throw notToBeRetried(error);
    });
    return { key, previous: null, derivedFrom };
  }
}

/** What a create asks, once its body is read: its id is the client's (`Idempotency-Key`) or a fresh one. */
type Create = {
  subject: string;
  body: CreateResponseBody;
  messages: string[];
  steer: boolean;
  id: string;
  idFromClient: boolean;
  response: ServerResponse;
};

/** The conversation a create goes into, the response it continues there, and the nonce its key was derived from (a key the door derives). */
type Into = { key: string; previous: { key: string; input: string } | null; derivedFrom?: string };

/** The previous response is not the latest of its conversation, the worker found: the create forks. */
class NotLatest extends Error {}

/** The nonce of a fork's key: the previous response and the create's id (a response id may be longer than a nonce may be). */
const forkNonce = (previousResponseId: string, id: string): string => `fork.${createHash('sha256').update(`${previousResponseId}\n${id}`).digest('hex')}`;

function json(response: ServerResponse, body: ResponseAnswer): void {
  response.statusCode = 200;
  response.setHeader('content-type', 'application/json; charset=utf-8');
  response.end(JSON.stringify(body));
}
