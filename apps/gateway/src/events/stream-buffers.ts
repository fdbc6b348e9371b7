import { Inject, Injectable } from '@nestjs/common';
import type { Config, Log } from '@rudder/runtime';
import { GatewayMetrics } from '../http/gateway-metrics';
import { CONFIG, LOG } from '../tokens';
import type { StreamBufferCap } from './sse';

/**
 * The cap on what each event stream's response may hold unsent (`STREAM_BUFFER_BYTES`, see
 * `responseSink`): a client that stops reading costs the gateway at most that, not every byte
 * its conversation produces from then on. A stream dropped past it is counted
 * (`rudder_sse_slow_clients_dropped_total`) and logged once.
 */
@Injectable()
export class StreamBuffers {
  private readonly maxBytes: number;

  constructor(
    @Inject(CONFIG) config: Config,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(LOG) private readonly log: Log,
  ) {
    this.maxBytes = config.STREAM_BUFFER_BYTES;
  }

  /** The cap of one stream of `conversation`. */
  capOf(conversation: string): StreamBufferCap {
    return {
      maxBytes: this.maxBytes,
      dropped: (buffered) => {
        this.metrics.slowClientDropped();
        this.log.warn('dropped an event stream whose client reads too slowly; it resumes with Last-Event-ID', {
          conversation,
          buffered,
          cap: this.maxBytes,
        });
      },
    };
  }
}
