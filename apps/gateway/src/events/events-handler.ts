import type { ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import type { StreamCursor } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { SubjectLimits } from '../limits/subject-limits';
import { GatewayMetrics } from '../http/gateway-metrics';
import { LOG } from '../tokens';
import { EventStream } from './event-stream';
import { LiveEvents } from '../live/live-events';
import { ReaderAccess } from './reader-access';
import { responseSink, type ResponseSink, type StreamFormat, type StreamSink } from './sse';
import { StreamBuffers } from './stream-buffers';

export type OpenStream = {
  /** Already validated (`ConversationKey`). */
  key: string;
  subject: string;
  /** Where the client is; null for live only. */
  after: StreamCursor | null;
  response: ServerResponse;
};

/** A stream `EventsHandler.follow` set up: live once started, until closed. */
export type FollowedStream = { start(): Promise<void>; close(): void };

/**
 * `GET /v1/conversations/{key}/events`: serves one `EventStream` until the client goes away,
 * its reader loses read access, or the gateway stops. Resolves once the stream is live;
 * rejects (with nothing sent) when access is refused or the history cannot be had.
 *
 * The stream subscribes to the live consumer first, then asks for the reader's access (the
 * companion's status, once it has folded at least what this gateway has seen of the
 * conversation): everything after that status's position reaches the stream, which folds the
 * reader's access along it (see `EventStream`, `ReaderAccess`).
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
    @Inject(LOG) private readonly log: Log,
  ) {}

  async open({ key, subject, after, response }: OpenStream): Promise<void> {
    const stream = this.follow({ key, subject, after, sink: this.sinkOn(response, key) });
    // The response's 'close': the client went away (or the stream ended). Not the request's:
    // since Node 16 that fires as soon as the request has been read.
    response.on('close', stream.close);
    // The client may have gone while the stream was being set up: its 'close' has fired already.
    if (response.destroyed) stream.close();
    try {
      await stream.start();
    } catch (error) {
      response.off('close', stream.close);
      throw error;
    }
  }

  /**
   * One stream of the conversation to `sink`, subscribed to the live consumer at once (so a
   * write made after this call has its events in it) and started by `start()`, which resolves
   * once it is live and rejects (with nothing written, the stream closed) when access is refused
   * or the history cannot be had. `close()` ends it and lets its slot of the subject's open
   * streams go; call it once the sink's reader is gone. `format`: another door's translation
   * of the events (`StreamFormat`). Every stream takes a slot (429 past
   * LIMIT_STREAMS_PER_SUBJECT), also one a door follows for an answer of its own.
   */
  follow(options: { key: string; subject: string; after: StreamCursor | null; sink: StreamSink; format?: StreamFormat }): FollowedStream {
    const { key, subject, after, sink, format } = options;
    const release = this.metrics.streamOpened(this.limits.openStream(subject));
    const stream = new EventStream({
      after,
      reader: () => this.readerOf(key, subject),
      stored: (position, floor) => this.companion.eventPages(key, position, floor),
      recent: (position) => this.live.recentAfter(key, position),
      replayTokens: (cursor) => this.live.tokensAfter(key, cursor),
      latestPosition: () => this.live.latestPosition(key),
      sink,
      format,
      ended: (reason) => this.log.info('ended an event stream', { conversation: key, subject, reason }),
    });
    // Subscribed before the access and the history are asked for: see EventStream.
    const unsubscribe = this.live.subscribe(key, stream);
    let closed = false;
    let started = false;
    const letGo = () => {
      if (closed) return false;
      closed = true;
      unsubscribe();
      release();
      return true;
    };
    return {
      // Closed before it started, the stream has written nothing: its sink is left as it is (to answer an error, say).
      close: () => {
        if (letGo() && started) stream.end();
      },
      start: async () => {
        started = true;
        try {
          await stream.start();
        } catch (error) {
          // Nothing was written: the sink is left to answer the error.
          letGo();
          throw error;
        }
      },
    };
  }

  /** An HTTP response as the sink of a stream of the conversation, capped in what it may hold unsent (`STREAM_BUFFER_BYTES`). */
  sinkOn(response: ServerResponse, key: string): ResponseSink {
    return responseSink(response, this.buffers.capOf(key));
  }

  /** The reader's access as of the companion's status; null in open development mode (no check). */
  private async readerOf(key: string, subject: string): Promise<ReaderAccess | null> {
    if (this.access.open) return null;
    const status = await this.access.streamable(key, subject, this.live.latestPosition(key) ?? 0);
    const grants = Object.fromEntries((status?.grants ?? []).map((g) => [g.subject, g.access]));
    return new ReaderAccess(subject, { owner: status?.owner ?? null, grants }, status?.position ?? 0);
  }
}
