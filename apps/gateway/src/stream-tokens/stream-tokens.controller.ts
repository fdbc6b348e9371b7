import { Body, Controller, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { Authenticator } from '../auth/authenticator';
import { ConversationAccess } from '../auth/conversation-access';
import { conversationKeyOf, parseEdge } from '../edge';

/** No body, or `{}`: a stream token has no options (its lifetime is the gateway's AUTH_STREAM_TOKEN_TTL_SECONDS). */
const StreamTokenBody = z.object({}).strict().optional();

@Controller('v1/conversations/:key')
@UseGuards(AuthGuard)
export class StreamTokensController {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(Authenticator) private readonly authenticator: Authenticator,
  ) {}

  /**
   * 201 `{token, expiresAt}`: a short-lived token that opens this conversation's event stream
   * and nothing else (see `StreamTokens`). Needs read access now, checked as a read is; the
   * stream checks it again when it opens.
   */
  @Post('stream-tokens')
  @HttpCode(201)
  async issue(@Param('key') rawKey: string, @Body() body: unknown, @Subject() subject: string): Promise<{ token: string; expiresAt: string }> {
    const key = conversationKeyOf(rawKey);
    parseEdge(StreamTokenBody, body, 'stream-token body');
    await this.access.require(key, subject, 'read');
    return this.authenticator.streamTokens.issue({ subject, conversation: key });
  }
}
