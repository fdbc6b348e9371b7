import type { ServerResponse } from 'node:http';
import { Controller, Headers, Inject, Param, Query, Res, UseGuards } from '@nestjs/common';
import { parseStreamId, STREAM_ID_PATTERN } from '@rudder/contracts';
import { z } from 'zod';
import { AuthGuard, StreamRoute, Subject } from '../auth/auth.guard';
import { Route } from '../http/route';
import { EVENT_ROUTES } from './events.routes';
import { conversationKeyOf, parseEdge } from '../http/edge';
import { EventsHandler } from './events-handler';

const Cursor = z
  .string()
  .regex(STREAM_ID_PATTERN, 'the id of an event received: a position, or <position>.<offset> for a token')
  .transform((id) => parseStreamId(id)!);

@Controller()
@UseGuards(AuthGuard)
export class EventsController {
  constructor(@Inject(EventsHandler) private readonly handler: EventsHandler) {}

  /**
   * Server-Sent Events of one conversation (the ordering contract is `EventStream`'s).
   * Resumes after `Last-Event-ID`, or `?after=` for clients that cannot set headers; the
   * header wins, because a reconnecting EventSource sends it with its original URL. Without
   * either, the stream is live from now on. Errors before the stream opens answer as JSON.
   * The one route that takes a stream token, also as `?access_token=` (see `AuthGuard`).
   */
  @Route(EVENT_ROUTES.events)
  @StreamRoute()
  events(
    @Param('key') rawKey: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') afterQuery: unknown,
    @Subject() subject: string,
    @Res() response: ServerResponse,
  ): Promise<void> {
    const key = conversationKeyOf(rawKey);
    const after =
      lastEventId !== undefined
        ? parseEdge(Cursor, lastEventId, 'Last-Event-ID header')
        : afterQuery !== undefined
          ? parseEdge(Cursor, afterQuery, 'query after')
          : null;
    return this.handler.open({ key, subject, after, response });
  }
}
