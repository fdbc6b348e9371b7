import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import type { CompanionApproval, CompanionInput, CompanionStatus, ConversationEvent, TranscriptPage, TurnView } from '@rudder/contracts';
import { READ_MODELS, type ReadModels } from '../read-models/data-source';
import { readApproval } from '../queries/approval-view';
import { readConversationStatus } from '../queries/conversation-status';
import { readEventsAfter } from '../queries/event-replay';
import { databaseAnswers } from '../queries/health';
import { readInputOrPosition } from '../queries/input-view';
import { readTranscriptPage } from '../queries/transcript-page';
import { readTurnOfInput } from '../queries/turn-of-input';
import { readTurn } from '../queries/turn-view';
import { CompanionError, databaseUnavailable } from './errors';
import { approvalId, conversationKey, eventsQuery, inputId, transcriptQuery, turnId, turnsQuery } from './params';

/**
 * The companion's internal read API, for the gateway only: no authentication here, the gateway
 * authorizes each request before it asks. Conversation keys and ids are one URL-encoded path
 * segment each (`encodeURIComponent`). Every read is of one conversation, on its primary (the
 * read models' `forKey`); none reads across conversations.
 */
@Controller()
export class CompanionController {
  constructor(@Inject(READ_MODELS) private readonly readModels: ReadModels) {}

  @Get('healthz')
  async health(): Promise<{ ok: true }> {
    if (!(await Promise.all(this.readModels.all.map((dataSource) => databaseAnswers(dataSource)))).every(Boolean)) throw databaseUnavailable();
    return { ok: true };
  }

  @Get('conversations/:key')
  status(@Param('key') key: string): Promise<CompanionStatus> {
    return readConversationStatus(this.readModels.forKey(conversationKey(key)), conversationKey(key));
  }

  @Get('conversations/:key/messages')
  messages(@Param('key') key: string, @Query() query: unknown): Promise<TranscriptPage> {
    const conversation = conversationKey(key);
    const { after, limit, include } = transcriptQuery(query);
    return readTranscriptPage(this.readModels.forKey(conversation), conversation, { after: after ?? null, limit, rolledBack: include === 'rolledBack' });
  }

  @Get('conversations/:key/turns')
  async turnOfInput(@Param('key') key: string, @Query() query: unknown): Promise<TurnView> {
    const conversation = conversationKey(key);
    const { input } = turnsQuery(query);
    const turn = await readTurnOfInput(this.readModels.forKey(conversation), conversation, input);
    if (!turn) throw new CompanionError('not_found', `no turn has answered or taken input ${input} yet`);
    return turn;
  }

  @Get('conversations/:key/turns/:turn')
  async turn(@Param('key') key: string, @Param('turn') id: string): Promise<TurnView> {
    const conversation = conversationKey(key);
    const turn = await readTurn(this.readModels.forKey(conversation), conversation, turnId(id));
    if (!turn) throw new CompanionError('not_found', `conversation ${conversation} has no turn ${id}`);
    return turn;
  }

  @Get('conversations/:key/inputs/:id')
  async input(@Param('key') key: string, @Param('id') id: string): Promise<CompanionInput> {
    const conversation = conversationKey(key);
    const input = await readInputOrPosition(this.readModels.forKey(conversation), conversation, inputId(id));
    // Unseen: where its view was without it, so a reader looks for the input only after it.
    if ('unseenUpTo' in input) throw new CompanionError('not_found', `conversation ${conversation} has no input ${id}`, { position: input.unseenUpTo });
    return input;
  }

  @Get('conversations/:key/approvals/:approval')
  async approval(@Param('key') key: string, @Param('approval') id: string): Promise<CompanionApproval> {
    const conversation = conversationKey(key);
    const approval = await readApproval(this.readModels.forKey(conversation), conversation, approvalId(id));
    if (!approval) throw new CompanionError('not_found', `conversation ${conversation} has no approval ${id}`);
    return approval;
  }

  @Get('conversations/:key/events')
  events(@Param('key') key: string, @Query() query: unknown): Promise<{ items: ConversationEvent[] }> {
    const conversation = conversationKey(key);
    const { after, limit } = eventsQuery(query);
    return readEventsAfter(this.readModels.forKey(conversation), conversation, { after: after ?? null, limit });
  }
}
