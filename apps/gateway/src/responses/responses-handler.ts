import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import {
  approvalResponses,
  CreateResponseBody,
  inputTexts,
  RetrieveResponseQuery,
  type ApprovalResponseItem,
  type ResponseAnswer,
  type StreamCursor,
} from '@rudder/contracts';
import { derivedConversationKey, type InputOf } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { GatewayError } from '../errors/gateway-error';
import type { FollowedStream } from '../events/events-handler';
import { checkTextLength, clientIdOf, conversationKeyOf, parseEdge, requireJsonBody } from '../http/edge';
import { ApprovalHandler } from '../inputs/approval/approval';
import { Inputs } from '../inputs/inputs';
import { LiveEvents } from '../live/live-events';
import { CONFIG } from '../tokens';
import { inputRecord } from '../writes/submit';
import { notToBeRetried, ProtocolError, protocolRefusal } from './protocol-errors';
import { ResponseFold, STEER_KEY, type ResponseRequest } from './response-fold';
import { parseResponseId } from './response-id';
import { ResponseReads, startOf } from './response-reads';
import { ResponseStreams, type Until } from './response-streams';

export type CreateRequest = { subject: string; body: unknown; idempotencyKey: string | undefined; response: ServerResponse };
export type RetrieveRequest = { subject: string; id: string; query: unknown; response: ServerResponse };

/** The decision did not come within the decision timeout: the input is produced, so the create is answered as `queued`, never 503. */
class Undecided extends GatewayError {
  constructor() {
    super('unavailable', 'the worker has not decided on the input yet');
  }
}

/** A create is answered once its response ended, or where it waits for a person's approval (after `decisions`, the create's own). */
const answerable =
  (decisions: readonly string[] = []): Until =>
  (fold) =>
    fold.ended || fold.waitsForApproval(decisions);

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
    @Inject(ApprovalHandler) private readonly approvals: ApprovalHandler,
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
    const decisions = approvalResponses(body.input);
    if (decisions !== null) return this.decide(body, decisions, subject, response);
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
    const after: StreamCursor = { position: clientId === undefined ? (this.live.latestPosition(key) ?? 0) : await this.reads.before(key, input.id), tokenOffset: null };
    const fold = new ResponseFold(key, input.id, request);
    // A streamed create streams, in the background too (the turn runs on when the client goes).
    if (body.stream) return this.submitAndFollow(input, clientId !== undefined, this.streams.streamTo(response, fold, after, subject, null, answerable()));
    if (body.background) {
      await this.submit(input, clientId !== undefined);
      // Produced: answered as it stands, or as queued when the read side cannot say (never a retryable 503).
      const found = await this.reads.read(key, input.id, request, after.position).catch(() => fold);
      return json(response, found.unseen ? fold.answer() : found.answer());
    }
    const collecting = this.streams.collect(fold, after, subject, answerable());
    // A client gone before the answer: nothing is followed for it any more (the input stays produced).
    response.on('close', collecting.close);
    await this.submitAndFollow(input, clientId !== undefined, collecting);
    json(response, await collecting.answer);
  }

  /**
   * A create whose `input` is `mcp_approval_response` items: each decides one `mcp_approval_request`
   * of the response it continues (`previous_response_id`), as `POST …/approvals/{id}` does — the
   * same decision input, `write` access, a decision made before answered the same or 409. Nothing
   * is produced for an item naming no request of that response (400). The answer is that
   * response — the turn the calls wait in — once it ended or waits for approval again (or its
   * stream, from its start).
   */
  private async decide(body: CreateResponseBody, decisions: ApprovalResponseItem[], subject: string, response: ServerResponse): Promise<void> {
    if (body.previous_response_id == null) {
      throw new ProtocolError('bad_request', 'invalid_request', 'an mcp_approval_response answers a request of a response: name that response as previous_response_id', 'previous_response_id');
    }
    const previousId = body.previous_response_id;
    const { key, input, request } = await this.reads.readable(previousId, subject).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'not_found') {
        throw new ProtocolError('bad_request', 'previous_response_not_found', `previous response ${previousId} not found`, 'previous_response_id');
      }
      throw error;
    });
    const from = await this.reads.before(key, input);
    const current = await this.reads.read(key, input, request, from);
    decisions.forEach(({ approval_request_id: approval }, index) => {
      if (!current.asked(approval)) {
        throw new ProtocolError('bad_request', 'invalid_request', `response ${previousId} has no mcp_approval_request ${approval}`, `input.${index}.approval_request_id`);
      }
    });
    await this.access.mayWrite(key, subject);
    for (const { approval_request_id: approvalId, approve, reason } of decisions) {
      await this.approvals.decide({ key, subject, approvalId, body: { decision: approve ? 'approve' : 'deny', ...(reason == null ? {} : { reason }) } });
    }
    const answered = { ...request, background: body.background ?? false };
    const fold = new ResponseFold(key, input, answered);
    const after: StreamCursor = { position: from, tokenOffset: null };
    const until = answerable(decisions.map((d) => d.approval_request_id));
    if (body.stream) return this.streams.streamTo(response, fold, after, subject, null, until).start();
    if (body.background) return json(response, (await this.reads.read(key, input, answered, from)).answer());
    const collecting = this.streams.collect(fold, after, subject, until);
    response.on('close', collecting.close);
    await collecting.start();
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
}

function json(response: ServerResponse, body: ResponseAnswer): void {
  response.statusCode = 200;
  response.setHeader('content-type', 'application/json; charset=utf-8');
  response.end(JSON.stringify(body));
}
