import type { ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import type { StreamCursor } from '@rudder/contracts';
import { ConversationAccess } from '../auth/conversation-access';
import { CompanionClient } from '../companion-client';
import { SubjectLimits } from '../limits/subject-limits';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { EventStream } from './event-stream';
import { LiveEvents } from './live-events';
import { responseSink } from './sse';
import { StreamBuffers } from './stream-buffers';

export type OpenStream = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Where the client is; null for live only. */
  after: StreamCursor | null;
  response: ServerResponse;
};

/**
 * `GET /v1/conversations/{key}/events`: checks read access, then serves one `EventStream`
 * until the client goes away or the gateway stops. Resolves once the stream is live; rejects
 * (with nothing sent) when access is refused or the replay cannot be had.
 */
@Injectable()
export class EventsHandler {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(LiveEvents) private readonly live: LiveEvents,
    @Inject(SubjectLimits) private readonly limits: SubjectLimits,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(StreamBuffers) private readonly buffers: StreamBuffers,
  ) {}

  async open({ key, subject, after, response }: OpenStream): Promise<void> {
    await this.access.require(key, subject, 'read');
    // A slot of the subject's open streams (429 past LIMIT_STREAMS_PER_SUBJECT), held until the response closes.
    const release = this.metrics.streamOpened(this.limits.openStream(subject));
    // What the client missed: the companion's store, plus what this gateway saw live lately and
    // the store may not have folded yet (LiveEvents.recentAfter); the stream drops the overlap.
    const replay = async (position: number) => [
      ...(await this.companion.eventsAfter(key, position)),
      ...this.live.recentAfter(key, position),
    ];
    const stream = new EventStream({
      after,
      sink: responseSink(response, this.buffers.capOf(key)),
      replay,
      replayTokens: (cursor) => this.live.tokensAfter(key, cursor),
      latestPosition: () => this.live.latestPosition(key),
    });
    // Subscribed before the replay is asked for: see EventStream.
    const unsubscribe = this.live.subscribe(key, stream);
    // The response's 'close': the client went away (or the stream ended). Not the request's:
    // since Node 16 that fires as soon as the request has been read.
    const close = () => {
      unsubscribe();
      stream.end();
      release();
    };
    response.on('close', close);
    // The client may have gone while access was checked: its 'close' has fired already.
    if (response.destroyed) close();
    try {
      await stream.start();
    } catch (error) {
      response.off('close', close);
      unsubscribe();
      release();
      throw error;
    }
  }
}
