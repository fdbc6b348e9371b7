import type { ServerResponse } from 'node:http';
import { Body, Controller, Headers, Inject, Param, Query, Res, UseGuards } from '@nestjs/common';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { InputRateGuard } from '../limits/input-rate.guard';
import { Route } from '../http/route';
import { ResponsesHandler } from './responses-handler';
import { RESPONSES_ROUTES } from './responses.routes';

/** The OpenAI Responses protocol's door (docs/responses.md): its answers and errors in the protocol's shapes. */
@Controller()
@UseGuards(AuthGuard)
export class ResponsesController {
  constructor(@Inject(ResponsesHandler) private readonly handler: ResponsesHandler) {}

  /** A response: JSON once its turn ended, or its stream (`stream: true`), or at once (`background: true`). */
  @Route(RESPONSES_ROUTES.createResponse)
  @UseGuards(InputRateGuard)
  create(
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
    @Res() response: ServerResponse,
  ): Promise<void> {
    return this.handler.create({ subject, body, idempotencyKey, response });
  }

  /** Stops the response's turn (or takes back its waiting input); answers the response once it ended. */
  @Route(RESPONSES_ROUTES.cancelResponse)
  @UseGuards(InputRateGuard)
  cancel(@Param('id') id: string, @Subject() subject: string, @Res() response: ServerResponse): Promise<void> {
    return this.handler.cancel({ subject, id, response });
  }

  @Route(RESPONSES_ROUTES.retrieveResponse)
  retrieve(@Param('id') id: string, @Query() query: unknown, @Subject() subject: string, @Res() response: ServerResponse): Promise<void> {
    return this.handler.retrieve({ subject, id, query, response });
  }
}
