import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatCompletionCreateBody, ChatMessage } from './request';

const tokens = (text: string | null | undefined) => (text ? encode(text).length : 0);

/** A message's content as text: its string, or its text parts joined. */
const contentOf = (message: ChatMessage) =>
  typeof message.content === 'string' ? message.content : (message.content ?? []).map((part) => ('text' in part ? part.text : '')).join('');

/**
 * The prompt tokens of a request as this model counts them, as OpenAI's published way of
 * counting a chat request does: the `o200k_base` tokens of each message's content, of its tool
 * calls' ids, names and arguments and of a tool result's call id; 3 tokens of framing a message
 * and a tool call; 3 that prime the reply; the tools' JSON. What it reports as `prompt_tokens`,
 * and what `ModelRequest.tokens` holds for a test to check a request's size.
 */
export function promptTokens(body: ChatCompletionCreateBody): number {
  let sum = 3 + (body.tools && body.tools.length > 0 ? tokens(JSON.stringify(body.tools)) : 0);
  for (const message of body.messages) {
    sum += 3 + tokens(contentOf(message));
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) sum += 3 + tokens(call.id) + (call.type === 'function' ? tokens(call.function.name) + tokens(call.function.arguments) : 0);
    }
    if (message.role === 'tool') sum += tokens(message.tool_call_id);
  }
  return sum;
}
