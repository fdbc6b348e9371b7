import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { promptTokens } from './prompt-tokens';
import type { ModelRequest, ScriptedReply, ToolCallReply } from './script';

/** What every chunk/completion of one reply shares. */
export type ReplyMeta = { id: string; created: number; model: string };

/** A tool call as sent on the wire: id settled, arguments serialized. */
export type WireToolCall = { id: string; name: string; arguments: string };

export function toWireToolCalls(calls: ToolCallReply[], nextCallId: () => string): WireToolCall[] {
  return calls.map((call) => ({
    id: call.id ?? nextCallId(),
    name: call.name,
    arguments: JSON.stringify(call.arguments ?? {}),
  }));
}

const finishReason = (calls: WireToolCall[]) => (calls.length > 0 ? 'tool_calls' : 'stop');

/** The request's prompt tokens as counted when it arrived (`promptTokens`); the reply's, roughly (whitespace-separated words). */
function usage(request: ModelRequest, reply: ScriptedReply, calls: WireToolCall[]) {
  const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
  const prompt_tokens = request.tokens ?? promptTokens(request.body);
  const completion_tokens = words(reply.content ?? '') + calls.length;
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** The non-streaming answer. Content is null when the reply is tool calls only, as OpenAI sends it. */
export function completion(
  meta: ReplyMeta,
  request: ModelRequest,
  reply: ScriptedReply,
  calls: WireToolCall[],
): ChatCompletion {
  const content = reply.content ?? '';
  return {
    ...meta,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: content === '' && calls.length > 0 ? null : content,
          refusal: null,
          ...(calls.length > 0 && {
            tool_calls: calls.map(({ id, name, arguments: args }) => ({
              id,
              type: 'function',
              function: { name, arguments: args },
            })),
          }),
        },
        finish_reason: finishReason(calls),
        logprobs: null,
      },
    ],
    usage: usage(request, reply, calls),
  };
}

/** Content split into words, each keeping the whitespace after it, so the pieces join back exactly. */
export const contentPieces = (content: string): string[] => content.match(/\s*\S+\s*/g) ?? (content ? [content] : []);

/** Arguments split into fixed-size slices: clients must concatenate them, as with the real API. */
const argumentPieces = (args: string, size = 8): string[] =>
  Array.from({ length: Math.ceil(args.length / size) }, (_, i) => args.slice(i * size, (i + 1) * size));

/**
 * The chunks of a streamed answer, in OpenAI's order: the role, the content word by word, each
 * tool call (a first delta with index, id, type and name, then its arguments in slices), a last
 * chunk with the finish reason, and — when stream_options.include_usage — a usage chunk with no choices.
 * The caller writes `data: [DONE]` after them.
 */
export function streamChunks(
  meta: ReplyMeta,
  request: ModelRequest,
  reply: ScriptedReply,
  calls: WireToolCall[],
): ChatCompletionChunk[] {
  type Delta = ChatCompletionChunk.Choice.Delta;
  type Finish = ChatCompletionChunk.Choice['finish_reason'];
  const chunk = (delta: Delta, finish_reason: Finish = null): ChatCompletionChunk => ({
    ...meta,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason, logprobs: null }],
  });
  const chunks = [chunk({ role: 'assistant', content: '' })];
  for (const piece of contentPieces(reply.content ?? '')) chunks.push(chunk({ content: piece }));
  calls.forEach(({ id, name, arguments: args }, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] }));
    for (const piece of argumentPieces(args)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, finishReason(calls)));
  if (request.body.stream_options?.include_usage) {
    chunks.push({ ...meta, object: 'chat.completion.chunk', choices: [], usage: usage(request, reply, calls) });
  }
  return chunks;
}

/** OpenAI's error body: `{ error: { message, type, param, code } }`, type chosen by status as the real API does. */
export function errorBody(
  status: number,
  message: string,
  code: string | null = status === 429 ? 'rate_limit_exceeded' : null,
) {
  const type = status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code } };
}
