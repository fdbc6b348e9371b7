import { Controller, Inject, Param, Query, UseGuards } from '@nestjs/common';
import { InputId } from '@rudder/contracts';
import { z } from 'zod';
import { AuthGuard, Subject } from '../auth/auth.guard';
import { ConversationAccess } from '../companion/conversation-access';
import { CompanionClient } from '../companion/companion-client';
import { Route } from '../http/route';
import { READ_ROUTES } from './reads.routes';
import { conversationKeyOf, parseEdge } from '../http/edge';
import { GatewayError } from '../errors/gateway-error';

/** Turn ids are made by the worker and opaque here; the edge checks only their size. */
const TurnId = z.string().min(1, 'a turn id has 1 to 200 characters').max(200, 'a turn id has 1 to 200 characters');

@Controller()
@UseGuards(AuthGuard)
export class TurnsController {
  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
  ) {}

  /** `?input={id}`: the turn that answered or took that input (`TurnView`); 404 from the companion when none. */
  @Route(READ_ROUTES.turnOf)
  async turnOfInput(
    @Param('key') rawKey: string,
    @Query('input') rawInput: unknown,
    @Subject() subject: string,
  ): Promise<unknown> {
    const key = conversationKeyOf(rawKey);
    if (rawInput === undefined) throw new GatewayError('bad_request', 'give the input id: /turns?input={id}');
    const input = parseEdge(InputId, rawInput, 'query input');
    await this.access.readable(key, subject);
    return this.companion.turnOfInput(key, input);
  }

  /** One turn (`TurnView`); the companion's 404 is passed on. */
  @Route(READ_ROUTES.turn)
  async turn(@Param('key') rawKey: string, @Param('turn') rawTurn: string, @Subject() subject: string): Promise<unknown> {
    const key = conversationKeyOf(rawKey);
    const turn = parseEdge(TurnId, rawTurn, 'turn id');
    await this.access.readable(key, subject);
    return this.companion.turn(key, turn);
  }
}
