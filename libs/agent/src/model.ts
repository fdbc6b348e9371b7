import OpenAI from 'openai';
import type { ToolCall } from '@rudder/contracts';
import type { ModelMessage } from './messages';
import { toolSpec, type Tool } from './tools';

export type ModelReply = { content: string; toolCalls: ToolCall[] };

export type ModelClient = {
  /** Streams one reply; `onToken` sees each piece of content as it arrives. Rejects on abort. */
  reply(request: {
    messages: readonly ModelMessage[];
    tools: readonly Tool[];
    signal: AbortSignal;
    onToken?: (text: string) => void;
  }): Promise<ModelReply>;
};

/**
 * A model behind the Chat Completions API (OpenAI or any compatible server), streaming.
 * The client retries connection errors, 429 and 5xx itself (`maxRetries`) before failing.
 */
export function openAiModel(options: { baseURL?: string; apiKey: string; model: string; maxRetries?: number; timeoutMs?: number }): ModelClient {
  const client = new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey,
    maxRetries: options.maxRetries ?? 2,
    timeout: options.timeoutMs ?? 120_000,
  });
  return {
    async reply({ messages, tools, signal, onToken }) {
      const stream = await client.chat.completions.create(
        {
          model: options.model,
          messages: messages.map((m) => ({ ...m })),
          ...(tools.length > 0 ? { tools: tools.map(toolSpec) } : {}),
          stream: true,
        },
        { signal },
      );
      let content = '';
      const calls: { id: string; name: string; arguments: string }[] = [];
      for await (const chunk of stream) {
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
      return { content, toolCalls: calls.filter((c) => c !== undefined) };
    },
  };
}
