import type { ModelMessage } from './messages';
import { firstTokens, MESSAGE_FRAMING_TOKENS, REPLY_PRIMING_TOKENS, textTokens, type EarlierTurn } from './tokens';

/** The summary request's system prompt unless the agent sets its own (`context.summaryPrompt`). */
export const DEFAULT_SUMMARY_PROMPT = [
  'You compact the history of a conversation between a user and an assistant, so that the assistant can go on with it without the turns you summarise.',
  'Write one summary of the summary so far (if there is one) and the turns given: what the user asked for and decided, the facts, names, numbers and preferences the assistant must keep, what was done and what is still open.',
  'Keep it short (at most 300 words), in the conversation\'s language, in the third person ("The user asked…"). Write only the summary: no greeting, no comment, no questions.',
].join('\n');

/** How the turns to summarise are shown to the summary request: one paragraph a message. */
const rendered = (turn: EarlierTurn): string =>
  turn.messages
    .filter((m) => (m.role === 'user' || m.role === 'assistant') && m.content.trim() !== '')
    .map((m) => `${m.role === 'user' ? 'User' : 'Assistant'}: ${m.content}`)
    .join('\n\n');

/** Each turn's tokens in a summary request (its paragraphs), counted once. */
const summaryCounts = new WeakMap<EarlierTurn, number>();

/** The tokens `turn` adds to a summary request: a compaction that has turns of more than its `maxTokens` in all has more than the request can take. */
export function summaryTurnTokens(turn: EarlierTurn): number {
  let tokens = summaryCounts.get(turn);
  // Stryker disable next-line ConditionalExpression: a cache — made `true`, the turn is counted again, the same count.
  if (tokens === undefined) {
    tokens = textTokens(`\n\n${rendered(turn)}`);
    summaryCounts.set(turn, tokens);
  }
  return tokens;
}

export type SummaryRequest = {
  messages: ModelMessage[];
  /** How many of the turns given (the oldest first) it covers: at least one. */
  covers: number;
  /** Its tokens, as the budget counts a request. */
  tokens: number;
};

/**
 * The model request that makes a summary of `turns` (oldest first), on top of the summary so
 * far: the summary prompt as its system message, and one user message with the summary so far
 * and the turns, as many of the oldest as fit `maxTokens` (at least one, cut to fit when it
 * alone does not: a summary of a part of it beats none). No tools, and never a message of the
 * running turn: what the running turn took (a steered message) is in no summary request.
 */
export function summaryRequest(prompt: string, previous: string | null, turns: readonly EarlierTurn[], maxTokens: number): SummaryRequest {
  const intro = previous === null ? 'The conversation so far:' : `The summary so far:\n${previous}\n\nThe conversation after it:`;
  let tokens = REPLY_PRIMING_TOKENS + 2 * MESSAGE_FRAMING_TOKENS + textTokens(prompt) + textTokens(intro);
  const parts: string[] = [];
  for (const turn of turns) {
    const text = `\n\n${rendered(turn)}`;
    const more = summaryTurnTokens(turn);
    if (tokens + more <= maxTokens) {
      parts.push(text);
      tokens += more;
      continue;
    }
    if (parts.length === 0) {
      const cut = firstTokens(text, Math.max(0, maxTokens - tokens));
      parts.push(cut.text);
      tokens += textTokens(cut.text);
    }
    break;
  }
  return {
    messages: [
      { role: 'system', content: prompt },
      { role: 'user', content: intro + parts.join('') },
    ],
    covers: Math.max(1, parts.length),
    tokens,
  };
}

/** A summary as it is stored: the model's answer, trimmed, cut at `maxTokens` (a summary longer than that would crowd out the turns it makes room for). */
export function storedSummary(answer: string, maxTokens: number): { summary: string; tokens: number } {
  const cut = firstTokens(answer.trim(), maxTokens);
  return { summary: cut.text, tokens: Math.min(cut.of, maxTokens) };
}
