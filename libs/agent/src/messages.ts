import type { ToolCall } from '@rudder/contracts';

/** The messages of a Chat Completions request, as this system builds them. */
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export const userMessage = (content: string): ModelMessage => ({ role: 'user', content });

export const assistantMessage = (content: string, toolCalls: readonly ToolCall[]): ModelMessage =>
  toolCalls.length === 0
    ? { role: 'assistant', content }
    : {
        role: 'assistant',
        content,
        tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      };

export const toolMessage = (callId: string, result: string): ModelMessage => ({
  role: 'tool',
  tool_call_id: callId,
  content: result,
});
