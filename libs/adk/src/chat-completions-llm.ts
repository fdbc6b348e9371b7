import { BaseLlm, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';
import type { Content, FunctionCall, Part } from '@google/genai';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { toolText } from './contents';

export type ChatCompletionsLlmSettings = {
  /** Default OPENAI_MODEL. */
  model?: string;
  /** Default OPENAI_BASE_URL (the openai client's default when unset). */
  baseURL?: string;
  /** Default OPENAI_API_KEY. */
  apiKey?: string;
  /** Retries of a failed request by the openai client. Default 2 (the client's). */
  maxRetries?: number;
};

/**
 * An ADK model that speaks OpenAI Chat Completions (ADK 2.0 ships Gemini, Apigee and routed
 * models only): `generateContentAsync` turns ADK's request (`Content`s, the system instruction,
 * function declarations) into Chat Completions messages and answers with ADK's `LlmResponse`s —
 * when streaming, a partial response per text delta and then the whole reply, as Gemini does.
 */
export class ChatCompletionsLlm extends BaseLlm {
  private readonly client: OpenAI;

  constructor(settings: ChatCompletionsLlmSettings = {}) {
    super({ model: settings.model ?? process.env.OPENAI_MODEL ?? 'gpt-4o-mini' });
    this.client = new OpenAI({
      baseURL: settings.baseURL ?? process.env.OPENAI_BASE_URL,
      apiKey: settings.apiKey ?? process.env.OPENAI_API_KEY ?? 'unset',
      maxRetries: settings.maxRetries,
    });
  }

  async *generateContentAsync(request: LlmRequest, stream = false, abortSignal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    const body = { model: this.model, messages: chatMessages(request), ...(toolsOf(request).length > 0 ? { tools: toolsOf(request) } : {}) };
    if (!stream) {
      const completion = await this.client.chat.completions.create({ ...body, stream: false }, { signal: abortSignal });
      const message = completion.choices[0]?.message;
      yield reply(
        message?.content ?? '',
        (message?.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [])),
        completion.usage,
      );
      return;
    }
    const chunks = await this.client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, { signal: abortSignal });
    let text = '';
    const calls: { id: string; name: string; arguments: string }[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of chunks) {
      usage = chunk.usage ?? usage;
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) {
        text += delta.content;
        yield { content: { role: 'model', parts: [{ text: delta.content }] }, partial: true };
      }
      for (const part of delta?.tool_calls ?? []) {
        const call = (calls[part.index] ??= { id: '', name: '', arguments: '' });
        call.id += part.id ?? '';
        call.name += part.function?.name ?? '';
        call.arguments += part.function?.arguments ?? '';
      }
    }
    yield reply(text, calls, usage);
  }

  connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('ChatCompletionsLlm has no live (bidirectional) connection'));
  }
}

function reply(text: string, calls: { id: string; name: string; arguments: string }[], usage: OpenAI.CompletionUsage | null | undefined): LlmResponse {
  const parts: Part[] = [...(text ? [{ text }] : []), ...calls.map((c) => ({ functionCall: { id: c.id, name: c.name, args: parseArgs(c.arguments) } }))];
  return {
    content: { role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] },
    turnComplete: true,
    ...(usage ? { usageMetadata: { promptTokenCount: usage.prompt_tokens, candidatesTokenCount: usage.completion_tokens, totalTokenCount: usage.total_tokens } } : {}),
  };
}

const parseArgs = (json: string): Record<string, unknown> => (json.trim() ? (JSON.parse(json) as Record<string, unknown>) : {});

/** ADK's request as Chat Completions messages: the system instruction, then each `Content` (a model's function calls an assistant message's tool calls, each function response a tool message). */
function chatMessages(request: LlmRequest): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  const system = instructionText(request.config?.systemInstruction);
  if (system) messages.push({ role: 'system', content: system });
  for (const content of request.contents) messages.push(...contentMessages(content));
  return messages;
}

function contentMessages(content: Content): ChatCompletionMessageParam[] {
  const parts = content.parts ?? [];
  const text = parts
    .filter((p) => p.text !== undefined && !p.thought)
    .map((p) => p.text)
    .join('');
  if (content.role === 'model') {
    const calls = parts.flatMap((p) => (p.functionCall ? [p.functionCall] : []));
    return [{ role: 'assistant', content: text, ...(calls.length > 0 ? { tool_calls: calls.map(wireCall) } : {}) }];
  }
  const results = parts.flatMap((p): ChatCompletionMessageParam[] =>
    p.functionResponse ? [{ role: 'tool', tool_call_id: p.functionResponse.id ?? '', content: toolText(p.functionResponse.response ?? {}) }] : [],
  );
  return [...results, ...(text ? [{ role: 'user' as const, content: text }] : [])];
}

const wireCall = (call: FunctionCall) => ({ id: call.id ?? '', type: 'function' as const, function: { name: call.name ?? '', arguments: JSON.stringify(call.args ?? {}) } });

function instructionText(instruction: unknown): string {
  if (instruction === undefined || instruction === null) return '';
  if (typeof instruction === 'string') return instruction;
  const parts = (instruction as Content).parts ?? (Array.isArray(instruction) ? (instruction as Part[]) : []);
  return parts.map((p) => (typeof p === 'string' ? p : (p.text ?? ''))).join('');
}

/** ADK's function declarations as Chat Completions tools; a genai `Schema`'s upper-case types (`OBJECT`) become JSON Schema's. */
function toolsOf(request: LlmRequest): ChatCompletionTool[] {
  return (request.config?.tools ?? []).flatMap((tool) =>
    'functionDeclarations' in tool
      ? (tool.functionDeclarations ?? []).map(
          (d): ChatCompletionTool => ({
            type: 'function',
            function: {
              name: d.name ?? '',
              description: d.description ?? '',
              parameters: (d.parametersJsonSchema as Record<string, unknown> | undefined) ?? (d.parameters ? jsonSchema(d.parameters) : { type: 'object', properties: {} }),
            },
          }),
        )
      : [],
  );
}

function jsonSchema(schema: unknown): Record<string, unknown> {
  if (Array.isArray(schema)) return schema.map(jsonSchema) as unknown as Record<string, unknown>;
  if (typeof schema !== 'object' || schema === null) return schema as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === 'type' && typeof value === 'string' ? value.toLowerCase() : key === 'properties' ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, jsonSchema(v)])) : jsonSchema(value),
    ]),
  );
}
