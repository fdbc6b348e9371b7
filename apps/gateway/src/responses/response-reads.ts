import { Inject, Injectable } from '@nestjs/common';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { GatewayError } from '../errors/gateway-error';
import { LiveEvents } from '../live/live-events';
import { ProtocolError } from './protocol-errors';
import { ResponseFold, type ResponseRequest } from './response-fold';
import { parseResponseId } from './response-id';

/**
 * A response as the read side has it: the conversation and input its id names, where its
 * events begin, and the response folded from the stored events (`ResponseFold`). 404 in the
 * protocol's shape for an id that names no response.
 */
@Injectable()
export class ResponseReads {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(LiveEvents) private readonly live: LiveEvents,
  ) {}

  /**
   * The response `id` names, when `subject` may read its conversation (404 for an id that names
   * none, 403 for another's); and the request it is read as: its model is the conversation's
   * agent (its events are read from its input on, after the conversation's opening that names
   * the agent).
   */
  async readable(id: string, subject: string): Promise<{ key: string; input: string; request: ResponseRequest }> {
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
  async before(key: string, input: string): Promise<number> {
    return startOf(await this.companion.inputOrPosition(key, input));
  }

  /** The response, as `read`; 404 when its input is not among the events (none was accepted under its id). */
  async found(key: string, input: string, request: ResponseRequest, from: number): Promise<ResponseFold> {
    const fold = await this.read(key, input, request, from);
    if (fold.unseen) throw new ProtocolError('not_found', 'not_found', `response ${fold.id} not found`);
    return fold;
  }

  /**
   * The response folded from the conversation's stored events, as far as this gateway has seen
   * them at least (its writes, and what its streams carried, announced ahead of its records too:
   * a retrieve after a stream ended reads the end the stream sent).
   */
  async read(key: string, input: string, request: ResponseRequest, from: number): Promise<ResponseFold> {
    const fold = new ResponseFold(key, input, request);
    for await (const page of this.companion.eventPages(key, from, this.live.seenPosition(key) ?? 0)) {
      for (const event of page) fold.see(event);
      if (fold.ended) break;
    }
    return fold;
  }
}

/** Where the events of a response begin: right before its input's acceptance, or where the companion's view was without it. */
export const startOf = (known: { position?: number } | { unseenUpTo: number }): number =>
  'unseenUpTo' in known ? known.unseenUpTo : known.position === undefined ? 0 : Math.max(0, known.position - 1);
