import type { DomainEvent } from '@rudder/contracts';
import { storedSummary, summaryRequest, summaryTurnTokens, type ModelClient, type ContextBudget, type TurnState } from '@rudder/agent';
import { emptyConversation, evolveConversation, type Conversation, type HistoryTurn } from './conversation';
import { readConversationPage } from '@rudder/event-store';
import type { Pool } from '@rudder/runtime';

export type CompactionInput = {
  pool: Pool;
  key: string;
  /** The conversation as the runner's fold holds it now. */
  conversation: Conversation;
  /** How many of the latest earlier turns the fold holds stay whole (`compactionDue`); all before them are summarised. */
  keep: number;
  turn: TurnState;
  step: number;
  budget: ContextBudget;
  model: ModelClient;
  signal: AbortSignal;
};

/**
 * Makes the `history.compacted` event of a compaction at `step` of the running turn: a summary,
 * by a model request of its own (the agent's `summaryPrompt`, the summary so far, the turns it
 * covers — never the running turn, so never a message steered to it), of the oldest earlier
 * turns not yet summarised, up to the latest `keep` the fold holds; as many as the request fits
 * (a compaction that covers fewer is followed by another at the same step). Turns the fold let go
 * of are read from the log. Nothing is stored here: the runner commits the event as a step, and
 * its once key (the last turn covered) stores it once, whatever crash comes between.
 */
export async function compaction(input: CompactionInput): Promise<DomainEvent | null> {
  const { conversation, keep, budget } = input;
  const turns = [...(await turnsOnlyInTheLog(input)), ...conversation.history.slice(0, conversation.history.length - keep)];
  if (turns.length === 0) return null;
  const previous = conversation.summary;
  const request = summaryRequest(budget.summaryPrompt, previous?.text ?? null, turns, budget.maxTokens);
  const reply = await input.model.reply({ messages: request.messages, tools: [], signal: input.signal });
  input.signal.throwIfAborted();
  const { summary, tokens } = storedSummary(reply.content, summaryTokens(budget));
  if (summary === '') throw new Error('the summary request answered nothing');
  const through = turns[request.covers - 1];
  return {
    type: 'history.compacted',
    data: { turn: input.turn.id, step: input.step, summary, through: { turn: through.turn, position: through.end }, turns: (previous?.turns ?? 0) + request.covers, tokens },
  };
}

/** The most tokens a summary keeps: a quarter of `compactAt`, so it never crowds out the turns kept whole beside it. */
export const summaryTokens = (budget: ContextBudget) => Math.max(1, Math.floor((budget.compactAt ?? budget.maxTokens) / 4));

/** How many events a compaction reads from the log at a time. */
export const LOG_PAGE_EVENTS = 200;

/**
 * The earlier turns after the summary that the fold let go of (`historyKept`; see
 * `Conversation.letGoThrough`), read from the log: the events after the summary's last turn up
 * to the end of the last turn let go of, folded on their own, a page at a time, and only as
 * many as the summary request can take (`budget.maxTokens`): the turns after those wait for
 * the next compaction.
 */
async function turnsOnlyInTheLog(input: CompactionInput): Promise<HistoryTurn[]> {
  const { conversation, budget } = input;
  const through = conversation.letGoThrough;
  let after = conversation.summary?.end ?? 0;
  let fold = emptyConversation(null);
  let tokens = 0;
  while (after < through) {
    const page = await readConversationPage(input.pool, input.key, { after, through, limit: LOG_PAGE_EVENTS });
    for (const event of page) {
      const turns = fold.history.length;
      fold = evolveConversation(fold, event);
      for (const turn of fold.history.slice(turns)) tokens += summaryTurnTokens(turn);
      if (tokens > budget.maxTokens) return fold.history;
    }
    if (page.length < LOG_PAGE_EVENTS) break;
    after = page[page.length - 1].position;
  }
  return fold.history;
}
