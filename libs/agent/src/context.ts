import { DEFAULT_SUMMARY_PROMPT } from './compaction';
import type { ModelMessage } from './messages';
import { contentTokens, firstTokens, MESSAGE_FRAMING_TOKENS, messageTokens, REPLY_PRIMING_TOKENS, textTokens, toolsTokens, turnTokens, type EarlierTurn } from './tokens';
import type { Tool } from './tools';

/** A tool result is sent with at most this many tokens, unless its agent or its tool says otherwise. */
export const DEFAULT_TOOL_RESULT_TOKENS = 8000;

/**
 * The prompt tokens the model reports per token the budget counted, learnt from each reply's
 * usage (the model's tokenizer, its framing and its tools' encoding differ from the count):
 * at least 1 (a count above the model's is safe; one below is not) and at most
 * `MAX_USAGE_RATIO` (a server that reports something else than a request's prompt tokens
 * must not shrink the budget to nothing). Held in memory per agent: a new process starts at 1.
 */
export class UsageRatio {
  private ratio = 1;

  get value(): number {
    return this.ratio;
  }

  /** A reply's usage: the model counted `reported` prompt tokens where the budget counted `counted`. */
  observe(counted: number, reported: number): void {
    if (!(counted > 0) || !(reported > 0)) return;
    this.ratio = Math.min(MAX_USAGE_RATIO, Math.max(1, reported / counted));
  }
}

export const MAX_USAGE_RATIO = 2;

/** What an agent's model requests may carry (its `context`; docs/agents.md). */
export type ContextBudget = {
  /** The most tokens a model request carries, as the model counts them (the count times the usage ratio). */
  maxTokens: number;
  /**
   * Past this many carried tokens (as the model counts them) the history is compacted at the
   * next step (`compactionDue`): a summary of the older earlier turns stands in for them. Null: never.
   */
  compactAt: number | null;
  /** The system prompt of the summary request (`summaryRequest`). */
  summaryPrompt: string;
  /** A tool result is sent with at most this many tokens (its tool's `maxResultTokens` wins); longer ones are truncated, with a marker. */
  toolResultTokens: number;
  usage: UsageRatio;
};

export const contextBudget = (settings: { maxTokens: number; compactAt?: number | null; toolResultTokens?: number; summaryPrompt?: string }): ContextBudget => ({
  maxTokens: settings.maxTokens,
  compactAt: settings.compactAt ?? null,
  summaryPrompt: settings.summaryPrompt ?? DEFAULT_SUMMARY_PROMPT,
  toolResultTokens: settings.toolResultTokens ?? DEFAULT_TOOL_RESULT_TOKENS,
  usage: new UsageRatio(),
});

/** What a model request is made of. */
export type RequestParts = {
  systemPrompt: string;
  /** The agent's plan (`planMessage`), sent as a system message right after the instructions (cut to its share of the budget); null: none. */
  plan?: string | null;
  tools: readonly Tool[];
  /** The summary that stands in for the turns before `earlier` (`history.compacted`); null when the history was never compacted. */
  summary: string | null;
  /** The earlier turns a request may carry, oldest first, each whole (its prompt, the messages steered to it, its answers). */
  earlier: readonly EarlierTurn[];
  /** The running turn's messages: its prompt, then each step's reply, its calls' results and the messages steered in after them. */
  turn: readonly ModelMessage[];
};

export type FittedRequest =
  /** `tokens`: as counted (the usage ratio is not in it); `earlierTurns`: how many of the earlier turns it carries. */
  | { fits: true; messages: ModelMessage[]; tokens: number; earlierTurns: number }
  /** Even without earlier turns and with its older steps' results left out, the running turn is `over` the budget (as the model counts). */
  | { fits: false; over: number; outcome: string };

/**
 * The model request for the running turn's next step, made to fit the budget: the system
 * prompt, the agent's plan (if it keeps one), the earlier turns that fit, then the running turn.
 *
 * - A tool result longer than its limit (the tool's `maxResultTokens`, else the budget's
 *   `toolResultTokens`) is sent truncated, with a marker saying so.
 * - The plan is sent with at most `PLAN_SHARE` of the budget; a longer one is truncated, with a
 *   marker saying so.
 * - Earlier turns are left out whole, the oldest first: a request carries the latest of them
 *   that fit beside the running turn, never a part of one.
 * - If the running turn alone is still over the budget, the results of its older steps (all
 *   but the latest reply's) are replaced by a marker, the oldest first: every call keeps a
 *   result, every message keeps its place (a steered message stays after its step's results).
 * - If it is over even so, the plan gives way: it is cut to the room left, or left out when not
 *   even its marker fits. The plan is never what keeps a turn from running.
 * - If it is over even so, the request does not fit: the turn cannot go on.
 *
 * Only what is sent changes: the messages given are never changed. Each message is counted
 * once (tokens.ts), so this is a walk over the messages, whatever their length.
 */
export function fitRequest(parts: RequestParts, budget: Omit<ContextBudget, 'compactAt' | 'summaryPrompt'>): FittedRequest {
  const limit = Math.floor(budget.maxTokens / budget.usage.value);
  const sent = truncatedResults(parts.turn, parts.tools, budget.toolResultTokens);
  const whole = parts.plan ?? null;
  let plan = whole ? sentPlan(whole, planTokens(limit)) : null;
  let tokens = fixedTokens({ ...parts, plan }) + sent.reduce((sum, m) => sum + messageTokens(m), 0);
  // Stryker disable next-line ConditionalExpression,EqualityOperator: a shortcut — the loop below tests `tokens > limit` itself before leaving anything out.
  if (tokens > limit) {
    const latestStep = sent.findLastIndex((m) => m.role === 'assistant');
    // Stryker disable next-line EqualityOperator: `i <= latestStep` reaches the latest step's reply too, which is no result (`continue`). (It also leaves out `tokens >= limit` on this line, which the specs kill.)
    for (let i = 0; i < latestStep && tokens > limit; i++) {
      const result = sent[i];
      if (result.role !== 'tool') continue;
      const marker = leftOut(parts.turn[i]);
      const saved = messageTokens(result) - messageTokens(marker);
      if (saved <= 0) continue;
      sent[i] = marker;
      tokens -= saved;
    }
  }
  if (tokens > limit && whole && plan !== null) {
    const without = tokens - textMessageTokens(plan);
    plan = sentPlan(whole, limit - without);
    tokens = without + (plan === null ? 0 : textMessageTokens(plan));
  }
  if (tokens > limit) {
    const over = Math.ceil(tokens * budget.usage.value) - budget.maxTokens;
    return { fits: false, over, outcome: `the turn does not fit the model's context window: ${over} tokens over a budget of ${budget.maxTokens}` };
  }
  let from = parts.earlier.length;
  while (from > 0 && tokens + turnTokens(parts.earlier[from - 1]) <= limit) tokens += turnTokens(parts.earlier[--from]);
  return { fits: true, messages: [...head({ ...parts, plan }), ...parts.earlier.slice(from).flatMap((t) => t.messages), ...sent], tokens, earlierTurns: parts.earlier.length - from };
}

/**
 * What every request starts with, before the earlier turns: the agent's instructions (the system
 * prompt), then the summary of the turns before them, if the history was compacted, then the
 * agent's plan, if it keeps one. What else is to come before the earlier turns goes here.
 */
function head(parts: Pick<RequestParts, 'systemPrompt' | 'summary' | 'plan'>): ModelMessage[] {
  const messages: ModelMessage[] = [{ role: 'system', content: parts.systemPrompt }];
  if (parts.summary !== null) messages.push(summaryMessage(parts.summary));
  if (parts.plan) messages.push({ role: 'system', content: parts.plan });
  return messages;
}

/** The tokens of the head (`head`), the tools and the reply's priming: what a request carries whatever its turns. */
const fixedTokens = (parts: Pick<RequestParts, 'systemPrompt' | 'summary' | 'plan' | 'tools'>) =>
  REPLY_PRIMING_TOKENS +
  textMessageTokens(parts.systemPrompt) +
  (parts.summary === null ? 0 : textMessageTokens(summaryMessage(parts.summary).content)) +
  (parts.plan ? textMessageTokens(parts.plan) : 0) +
  toolsTokens(parts.tools);

/** How a summary is sent: a user message that says what it is (it never outranks the instructions). */
export const SUMMARY_HEADING = '[A summary of the earlier part of this conversation, which is not shown in full:]';
export const summaryMessage = (summary: string): ModelMessage => ({ role: 'user', content: `${SUMMARY_HEADING}\n${summary}` });

/**
 * What the request would carry with every earlier turn given and every result as its limit
 * sends it, in tokens as the model counts them: what `compactAt` is measured against.
 */
export function carriedTokens(parts: RequestParts, budget: Pick<ContextBudget, 'maxTokens' | 'toolResultTokens' | 'usage'>): number {
  const sent = truncatedResults(parts.turn, parts.tools, budget.toolResultTokens);
  const plan = parts.plan ? sentPlan(parts.plan, planTokens(Math.floor(budget.maxTokens / budget.usage.value))) : null;
  const counted = fixedTokens({ ...parts, plan }) + parts.earlier.reduce((sum, t) => sum + turnTokens(t), 0) + sent.reduce((sum, m) => sum + messageTokens(m), 0);
  return Math.ceil(counted * budget.usage.value);
}

/**
 * Whether the history is to be compacted before this request: when what it would carry passes
 * `compactAt` and some earlier turns lie before the latest ones that together fit half of
 * `compactAt` (those are kept whole). Answers how many of the latest earlier turns to keep, the
 * older ones being summarised; null when no compaction is due (then the request is fitted as
 * always: a running turn that alone passes `compactAt` is no reason to summarise again).
 */
export function compactionDue(parts: RequestParts, budget: ContextBudget): number | null {
  if (budget.compactAt === null || carriedTokens(parts, budget) <= budget.compactAt) return null;
  const room = Math.floor(budget.compactAt / 2 / budget.usage.value);
  let keep = 0;
  for (let kept = 0; keep < parts.earlier.length; keep++) {
    kept += turnTokens(parts.earlier[parts.earlier.length - 1 - keep]);
    if (kept > room) break;
  }
  return keep < parts.earlier.length ? keep : null;
}

/** The most of a request's tokens the plan takes: a quarter of the budget, so that the running turn and its history keep the rest. */
export const PLAN_SHARE = 0.25;
const planTokens = (limit: number) => Math.floor(limit * PLAN_SHARE);

/** The marker a plan longer than its share ends with, once cut there. */
export const planTruncatedMarker = (tokens: number, shown: number) => `\n[truncated: this plan has ${tokens} tokens; only its first ${shown} are shown]`;

/** Each plan's cuts by their number of tokens (its share, and the room a tight request left), kept for the latest 1,024 plans. */
const planCuts = new Map<string, Map<number, string | null>>();
const CUTS_KEPT_PER_PLAN = 2;

/**
 * The plan as a request sends it in at most `max` tokens (as a message, its framing counted):
 * whole when it fits, else its first tokens and the marker; null when not even the marker fits.
 * Each cut is made once (the plan changes only when the model changes it).
 */
function sentPlan(plan: string, max: number): string | null {
  if (textMessageTokens(plan) <= max) return plan;
  let cuts = planCuts.get(plan);
  // Stryker disable next-line ConditionalExpression: a cache — made `true`, the plan's cuts are made again, the same text.
  if (!cuts) {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the cache's bound — letting go of a plan's cuts sooner or later changes only when they are made again, the same text.
    if (planCuts.size >= TEXT_COUNTS_KEPT) planCuts.delete(planCuts.keys().next().value!);
    planCuts.set(plan, (cuts = new Map()));
  }
  let sent = cuts.get(max);
  // Stryker disable next-line ConditionalExpression: a cache — made `true`, the cut is made again, the same text.
  if (sent === undefined) {
    sent = cutPlan(plan, max);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the cache's bound, as `planCuts`'s above.
    if (cuts.size >= CUTS_KEPT_PER_PLAN) cuts.delete(cuts.keys().next().value!);
  }
  cuts.delete(max);
  cuts.set(max, sent); // the latest used last: the one let go of is the least recently used
  return sent;
}

function cutPlan(plan: string, max: number): string | null {
  const of = textMessageTokens(plan) - MESSAGE_FRAMING_TOKENS;
  // A cut's text may count a token more or less than its parts (tokens merge across the cut): cut again until it fits.
  for (let shown = max - MESSAGE_FRAMING_TOKENS - textTokens(planTruncatedMarker(of, max)); shown > 0; ) {
    const cut = firstTokens(plan, shown).text + planTruncatedMarker(of, shown);
    const tokens = textMessageTokens(cut);
    if (tokens <= max) return cut;
    shown -= tokens - max;
  }
  return null;
}

/** The marker a result longer than its limit ends with, once cut there. */
export const truncatedMarker = (tokens: number, shown: number) => `\n[truncated: this result has ${tokens} tokens; only its first ${shown} are shown]`;

/** What an older step's result is sent as when the running turn needs its room. */
export const leftOutMarker = (tokens: number) => `[left out to fit the model's context window: this result of ${tokens} tokens was read at its step]`;

/** The turn's messages with every result past its tool's limit truncated (a copy: the turn's own are never changed). */
function truncatedResults(turn: readonly ModelMessage[], tools: readonly Tool[], toolResultTokens: number): ModelMessage[] {
  const toolOf = new Map<string, string>();
  return turn.map((message) => {
    // Stryker disable next-line ConditionalExpression: made `true`, a message of another role has no tool calls, so nothing is set (made `false`, the specs kill it).
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) toolOf.set(call.id, call.function.name);
    if (message.role !== 'tool') return message;
    const name = toolOf.get(message.tool_call_id);
    const max = tools.find((t) => t.name === name)?.maxResultTokens ?? toolResultTokens;
    return contentTokens(message) > max ? truncated(message, max) : message;
  });
}

/** Each long result's truncated form, made once (a conversation's agent, and so its limits, never change). */
const truncations = new WeakMap<ModelMessage, { max: number; message: ModelMessage }>();

function truncated(message: ModelMessage & { role: 'tool' }, max: number): ModelMessage {
  const made = truncations.get(message);
  if (made?.max === max) return made.message;
  const head = firstTokens(message.content, max);
  const cut: ModelMessage = { role: 'tool', tool_call_id: message.tool_call_id, content: head.text + truncatedMarker(head.of, max) };
  truncations.set(message, { max, message: cut });
  return cut;
}

/** Each older result's marker, made once. */
const markers = new WeakMap<ModelMessage, ModelMessage>();

function leftOut(message: ModelMessage): ModelMessage {
  // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable — `fitRequest` leaves out only a sent result, which is the turn's result at the same place (the types need the check).
  if (message.role !== 'tool') throw new Error('only a tool result is left out');
  let marker = markers.get(message);
  if (!marker) {
    marker = { role: 'tool', tool_call_id: message.tool_call_id, content: leftOutMarker(contentTokens(message)) };
    markers.set(message, marker);
  }
  return marker;
}

/** Texts' counts as a message (a system prompt: one per agent, or one per conversation; a summary), kept for the latest 1,024 texts. */
const textCounts = new Map<string, number>();
const TEXT_COUNTS_KEPT = 1024;

function textMessageTokens(text: string): number {
  let tokens = textCounts.get(text);
  if (tokens === undefined) {
    tokens = MESSAGE_FRAMING_TOKENS + textTokens(text);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the cache's bound — letting go of a text's count sooner or later changes only when it is counted again, the same count.
    if (textCounts.size >= TEXT_COUNTS_KEPT) textCounts.delete(textCounts.keys().next().value!);
    textCounts.set(text, tokens);
  }
  return tokens;
}
