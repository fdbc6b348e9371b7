import type { ModelMessage as AiMessage } from 'ai';
import type { ModelMessage } from '@rudder/agent';

/**
 * Messages of the turn's input (Chat Completions, as Rudder keeps them) as the AI SDK's own:
 * a call's arguments parsed, a result named by its call's tool.
 */
export function toAiMessages(messages: readonly ModelMessage[]): AiMessage[] {
  const tools = new Map<string, string>();
  return messages.map((message): AiMessage => {
    switch (message.role) {
      case 'system':
      case 'user':
        return { role: message.role, content: message.content };
      case 'assistant': {
        const calls = message.tool_calls ?? [];
        for (const call of calls) tools.set(call.id, call.function.name);
        if (calls.length === 0) return { role: 'assistant', content: message.content };
        return {
          role: 'assistant',
          content: [
            ...(message.content === '' ? [] : [{ type: 'text' as const, text: message.content }]),
            ...calls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.function.name, input: parseArguments(call.function.arguments) })),
          ],
        };
      }
      case 'tool':
        return {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: message.tool_call_id, toolName: tools.get(message.tool_call_id) ?? 'unknown', output: { type: 'text', value: message.content } }],
        };
    }
  });
}

const parseArguments = (args: string): unknown => {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
};
