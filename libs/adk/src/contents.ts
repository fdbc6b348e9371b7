import type { LlmResponse } from '@google/adk';
import type { Content, Part } from '@google/genai';
import type { ModelMessage, ModelReply } from '@rudder/agent';

/**
 * A function response as the text Rudder stores and Chat Completions carries: a plain result
 * (`{ result: text }`, what ADK makes of a tool's string) is its text, anything else its JSON.
 */
export function toolText(response: Record<string, unknown>): string {
  const keys = Object.keys(response);
  if (keys.length === 1 && keys[0] === 'result' && typeof response.result === 'string') return response.result;
  return JSON.stringify(response);
}

/** A stored result as ADK's function response: its JSON object when it is one, else `{ result: text }` (so `toolText` gives the text back). */
export function toolResponse(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: a plain result
  }
  return { result: text };
}

/**
 * Rudder's input as ADK `Content`s, each with its author: user messages the user's, an
 * assistant message a model `Content` of the agent's (its text, its function calls), a run of
 * tool results one user `Content` of function responses (ADK merges parallel results so).
 */
export function inputContents(messages: readonly ModelMessage[], agentName: string): { author: string; content: Content }[] {
  const names = new Map<string, string>();
  const out: { author: string; content: Content }[] = [];
  for (const message of messages) {
    if (message.role === 'user' || message.role === 'system') {
      out.push({ author: 'user', content: { role: 'user', parts: [{ text: message.content }] } });
    } else if (message.role === 'assistant') {
      const calls = message.tool_calls ?? [];
      for (const call of calls) names.set(call.id, call.function.name);
      const parts: Part[] = [
        ...(message.content ? [{ text: message.content }] : []),
        ...calls.map((c) => ({ functionCall: { id: c.id, name: c.function.name, args: parseArgs(c.function.arguments) } })),
      ];
      out.push({ author: agentName, content: { role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] } });
    } else {
      const part: Part = { functionResponse: { id: message.tool_call_id, name: names.get(message.tool_call_id) ?? '', response: toolResponse(message.content) } };
      const last = out.at(-1);
      if (last?.content.parts?.every((p) => p.functionResponse)) last.content.parts.push(part);
      else out.push({ author: agentName, content: { role: 'user', parts: [part] } });
    }
  }
  return out;
}

/** ADK's model response as Rudder's reply: its text, its function calls, its usage; an error response (ADK answers a failed request so) throws. */
export function modelReply(response: LlmResponse): ModelReply {
  if (response.errorCode) throw new Error(`the model failed: ${response.errorCode} ${response.errorMessage ?? ''}`.trim());
  const parts = response.content?.parts ?? [];
  const usage = response.usageMetadata;
  return {
    content: parts
      .filter((p) => p.text !== undefined && !p.thought)
      .map((p) => p.text)
      .join(''),
    toolCalls: parts.flatMap((p) => (p.functionCall ? [{ id: p.functionCall.id ?? '', name: p.functionCall.name ?? '', arguments: JSON.stringify(p.functionCall.args ?? {}) }] : [])),
    ...(usage?.promptTokenCount !== undefined
      ? { usage: { promptTokens: usage.promptTokenCount, completionTokens: usage.candidatesTokenCount ?? 0, totalTokens: usage.totalTokenCount ?? usage.promptTokenCount + (usage.candidatesTokenCount ?? 0) } }
      : {}),
  };
}

/** Rudder's reply (stored, or just asked, with the log's call ids) as ADK's model response. */
export function llmResponse(reply: ModelReply): LlmResponse {
  const parts: Part[] = [
    ...(reply.content ? [{ text: reply.content }] : []),
    ...reply.toolCalls.map((c) => ({ functionCall: { id: c.id, name: c.name, args: parseArgs(c.arguments) } })),
  ];
  return {
    content: { role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] },
    turnComplete: true,
    ...(reply.usage ? { usageMetadata: { promptTokenCount: reply.usage.promptTokens, candidatesTokenCount: reply.usage.completionTokens, totalTokenCount: reply.usage.totalTokens } } : {}),
  };
}

const parseArgs = (json: string): Record<string, unknown> => (json.trim() ? (JSON.parse(json) as Record<string, unknown>) : {});
