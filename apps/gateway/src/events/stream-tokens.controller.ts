import { Body, Controller, Inject, Param, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { Authenticator } from '../auth/authenticator';
import { ConversationAccess } from '../companion/conversation-access';
import { Route } from '../http/route';
import { EVENT_ROUTES } from './events.routes';
import { conversationKeyOf, parseEdge } from '../http/edge';

/** No body, or `{}`: a stream token has no options (its lifetime is the gateway's AUTH_STREAM_TOKEN_TTL_SECONDS). */
const StreamTokenBody = z.object({}).strict().optional();

@Controller()
@UseGuards(AuthGuard)
export class StreamTokensController {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(Authenticator) private readonly authenticator: Authenticator,
  ) {}

  /**
   * 201 `{token, expiresAt}`: a short-lived token that opens this conversation's event stream
   * and nothing else (see `StreamTokens`). Refused as opening the stream is (403 when the
   * conversation has an owner and the subject may not read it); the stream carries only what
   * its reader may read at each event's position.
   */
  @Route(EVENT_ROUTES.streamToken)
  async issue(@Param('key') rawKey: string, @Body() body: unknown, @Subject() subject: string): Promise<{ token: string; expiresAt: string }> {
    const key = conversationKeyOf(rawKey);
    parseEdge(StreamTokenBody, body, 'stream-token body');
    await this.access.streamable(key, subject);
    return this.authenticator.streamTokens.issue({ subject, conversation: key });
  }
}
