import OpenAI from 'openai';
import type { ToolCall, Usage } from '@rudder/contracts';
import type { ModelMessage } from './messages';
import { modelFetch } from './model-fetch';
import { toolSpec, type Tool } from './tools';

/** One reply of the model; `usage` when the server reports it. */
export type ModelReply = { content: string; toolCalls: ToolCall[]; usage?: Usage };

export type ModelClient = {
  /** Streams one reply; `onToken` sees each piece of content as it arrives. Rejects on abort. */
  reply(request: {
    messages: readonly ModelMessage[];
    tools: readonly Tool[];
    signal: AbortSignal;
    onToken?: (text: string) => void;
  }): Promise<ModelReply>;
};

/** A model behind the Chat Completions API: OpenAI, or any compatible server at `baseURL`. */
export type OpenAiModelOptions = {
  model: string;
  baseURL?: string;
  apiKey: string;
  temperature?: number;
  maxTokens?: number;
  /** Retries of a failed request (connection errors, 408, 409, 429, 5xx) with backoff, before the reply fails. Default 3. */
  maxRetries?: number;
  timeoutMs?: number;
};

/**
 * A model behind the Chat Completions API (OpenAI or any compatible server), streaming. The
 * client retries connection errors, 429 and 5xx itself, with exponential backoff that honours
 * `Retry-After`, before failing; nothing is stored until a whole reply arrived, so a retried
 * request stores one reply.
 */
export function openAiModel(options: OpenAiModelOptions): ModelClient {
  const client = new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey,
    maxRetries: options.maxRetries ?? 3,
    timeout: options.timeoutMs ?? 120_000,
    fetch: modelFetch(),
  });
  return {
    async reply({ messages, tools, signal, onToken }) {
      const stream = await client.chat.completions.create(
        {
          model: options.model,
          messages: messages.map((m) => ({ ...m })),
          ...(tools.length > 0 ? { tools: tools.map(toolSpec) } : {}),
          ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
          ...(options.maxTokens === undefined ? {} : { max_completion_tokens: options.maxTokens }),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal },
      );
      let content = '';
      let usage: Usage | undefined;
      const calls: { id: string; name: string; arguments: string }[] = [];
      for await (const chunk of stream) {
        if (chunk.usage) {
          usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens, totalTokens: chunk.usage.total_tokens };
        }
        const delta = chunk.choices[0]?.delta;
        if (!delta) continue;
        if (delta.content) {
          content += delta.content;
          onToken?.(delta.content);
        }
        for (const part of delta.tool_calls ?? []) {
          const call = (calls[part.index] ??= { id: '', name: '', arguments: '' });
          if (part.id) call.id = part.id;
          if (part.function?.name) call.name += part.function.name;
          if (part.function?.arguments) call.arguments += part.function.arguments;
        }
      }
      // The package ends a stream that was aborted midway as if it were complete: what came is
      // only part of a reply, and must never be stored as one.
      signal.throwIfAborted();
      return { content, toolCalls: calls.filter((c) => c !== undefined), ...(usage ? { usage } : {}) };
    },
  };
}
