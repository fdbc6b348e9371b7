import type { ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import type { ResponseAnswer, StreamCursor } from '@rudder/contracts';
import { EventsHandler, type FollowedStream } from '../events/events-handler';
import { sseOf, type ProtocolEvent, type ResponseFold } from './response-fold';

/** How long a non-streaming create waits for its turn to end before it answers the response as it stands (`in_progress`, to be polled). */
export const DEFAULT_RESPONSE_WAIT_MS = 5 * 60_000;

/** A non-streaming response followed until it ends: `answer` resolves with it. */
export type Collecting = FollowedStream & { answer: Promise<ResponseAnswer> };

/** Where a followed response is answered: by default its end; a create's also where it waits for approval (`ResponseFold.waitsForApproval`). */
export type Until = (fold: ResponseFold) => boolean;
const ended: Until = (fold) => fold.ended;

/**
 * A response followed through the conversation's event stream (`EventsHandler.follow`: replay,
 * live tail, read access at each event), folded into the protocol's events as they come: to
 * the HTTP response as the protocol's stream, or collected until the response ends.
 */
@Injectable()
export class ResponseStreams {
  constructor(@Inject(EventsHandler) private readonly events: EventsHandler) {}

  /**
   * The response's stream on the HTTP response: the protocol's events (their SSE event names
   * the protocol's types, keep-alives comment lines), from `response.created` to its one
   * terminal event, then the response ends (or at `until`: a create's stream ends where its
   * response waits for approval, with no terminal event). `startingAfter`: the events up to it are not sent.
   */
  streamTo(response: ServerResponse, fold: ResponseFold, after: StreamCursor, subject: string, startingAfter: number | null, until = ended): FollowedStream {
    const sink = this.events.sinkOn(response, fold.key);
    const write = (events: ProtocolEvent[]) =>
      events
        .filter((event) => startingAfter === null || event.sequence_number > startingAfter)
        .map(sseOf)
        .join('');
    const follow = this.events.follow({
      key: fold.key,
      subject,
      after,
      sink: {
        open: sink.open,
        drained: sink.drained,
        end: sink.end,
        write: (chunk) => {
          sink.write(chunk);
          if (until(fold)) sink.end();
        },
      },
      format: {
        event: (event) => {
          if (until(fold)) return '';
          const chunk = write(fold.see(event));
          // Its end sent before (`starting_after` past it): nothing to write, and the stream ends all the same.
          if (until(fold) && chunk === '') sink.end();
          return chunk;
        },
        token: () => '',
      },
    });
    response.on('close', follow.close);
    return follow;
  }

  /** A non-streaming create: the response once it ended, or at `until` (or as it stands after `DEFAULT_RESPONSE_WAIT_MS`). */
  collect(fold: ResponseFold, after: StreamCursor, subject: string, until = ended): Collecting {
    let done: (answer: ResponseAnswer) => void = () => undefined;
    const answer = new Promise<ResponseAnswer>((resolve) => (done = resolve));
    const follow = this.events.follow({
      key: fold.key,
      subject,
      after,
      sink: { open: () => undefined, write: () => undefined, end: () => done(fold.answer()) },
      format: {
        event: (event) => {
          if (!until(fold)) fold.see(event);
          if (until(fold)) done(fold.answer());
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
