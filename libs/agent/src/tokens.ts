import { decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ModelMessage } from './messages';
import { toolSpec, type Tool } from './tools';

/**
 * Token counts as a request's budget measures them: OpenAI's `o200k_base` encoding (the
 * GPT-4o, o-series and GPT-5 models'), and its published way of counting a chat request —
 * each message's content, the ids, names and arguments of its tool calls, 3 tokens of framing a
 * message (3 more a tool call), 3 that prime the reply, and the tools' JSON. Another model's
 * tokenizer differs: the budget corrects by the prompt tokens the model reports
 * (`UsageRatio`, context.ts).
 */
export const textTokens = (text: string): number => (text === '' ? 0 : encode(text).length);

/** The first `tokens` tokens of `text`, and how many it had: `text` itself when it has no more. */
export function firstTokens(text: string, tokens: number): { text: string; of: number } {
  const encoded = encode(text);
  return { text: encoded.length <= tokens ? text : decode(encoded.slice(0, tokens)), of: encoded.length };
}

export const MESSAGE_FRAMING_TOKENS = 3;
export const REPLY_PRIMING_TOKENS = 3;

/** One message's tokens, counted now (see `messageTokens` for the count kept). */
export const countMessage = (message: ModelMessage): number => countParts(message).tokens;

/** A message's tokens, and its content's alone. */
type Counted = { tokens: number; content: number };

function countParts(message: ModelMessage): Counted {
  const content = textTokens(message.content);
  let tokens = MESSAGE_FRAMING_TOKENS + content;
  // Stryker disable next-line ConditionalExpression: made `true`, a message of another role has no tool calls, so the loop runs over none (made `false`, the specs kill it).
  if (message.role === 'assistant') {
    for (const call of message.tool_calls ?? []) {
      tokens += MESSAGE_FRAMING_TOKENS + textTokens(call.id) + textTokens(call.function.name) + textTokens(call.function.arguments);
    }
  }
  if (message.role === 'tool') tokens += textTokens(message.tool_call_id);
  return { tokens, content };
}

/**
 * Each message is counted once, the first time a request is built with it, and the count kept
 * with the message (messages are never changed: the fold makes new ones). Held weakly: a
 * message the conversation's fold lets go takes its count with it.
 */
const counted = new WeakMap<ModelMessage, Counted>();

function countedParts(message: ModelMessage): Counted {
  let parts = counted.get(message);
  if (parts === undefined) {
    parts = countParts(message);
    counted.set(message, parts);
  }
  return parts;
}

/** One message's tokens, counted once. */
export const messageTokens = (message: ModelMessage): number => countedParts(message).tokens;

/** The tokens of one message's content alone, counted once. */
export const contentTokens = (message: ModelMessage): number => countedParts(message).content;

/**
 * An earlier turn as a request may carry it: its messages, whole, and their tokens, summed once
 * and kept with the turn (`tokens`: the conversation's fold keeps it in memory and in its
 * snapshot, so a conversation read again is not counted again). The fold sets it when the turn
 * ends from the counts its messages already had as the running turn; else it is counted the
 * first time a request or a compaction needs it.
 */
export type EarlierTurn = { readonly messages: readonly ModelMessage[]; tokens?: number };

export function turnTokens(turn: EarlierTurn): number {
  turn.tokens ??= turn.messages.reduce((sum, m) => sum + messageTokens(m), 0);
  return turn.tokens;
}

/** A message's tokens if they were counted already (nothing is counted now). */
export const knownTokens = (message: ModelMessage): number | undefined => counted.get(message)?.tokens;

/** A message's content's tokens if they were counted already (nothing is counted now). */
export const knownContentTokens = (message: ModelMessage): number | undefined => counted.get(message)?.content;

/** The tools' JSON as a request sends it, counted once per list of tools (an agent's list is made once). */
const countedTools = new WeakMap<readonly Tool[], number>();

export function toolsTokens(tools: readonly Tool[]): number {
  let tokens = countedTools.get(tools);
  if (tokens === undefined) {
    tokens = tools.length === 0 ? 0 : textTokens(JSON.stringify(tools.map(toolSpec)));
    countedTools.set(tools, tokens);
  }
  return tokens;
}

/** A whole request's tokens, counted now, message by message: what the budget measures (the tests recount with it). */
export const countRequest = (messages: readonly ModelMessage[], tools: readonly Tool[]): number =>
  messages.reduce((sum, m) => sum + countMessage(m), REPLY_PRIMING_TOKENS + (tools.length === 0 ? 0 : textTokens(JSON.stringify(tools.map(toolSpec)))));
