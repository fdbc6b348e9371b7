import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { ModelMessage, ModelReply, Steer } from '@rudder/agent';

/** Rudder's Chat Completions messages (a turn's input) as LangChain's own, which a LangGraph run starts from. */
export function toLangChain(messages: readonly ModelMessage[]): BaseMessage[] {
  return messages.map((m) => {
    switch (m.role) {
      case 'system':
        return new SystemMessage(m.content);
      case 'user':
        return new HumanMessage(m.content);
      case 'tool':
        return new ToolMessage({ content: m.content, tool_call_id: m.tool_call_id });
      case 'assistant':
        return new AIMessage({
          content: m.content,
          tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: parseArguments(c.function.arguments), type: 'tool_call' as const })),
        });
    }
  });
}

/** A model's reply (LangChain's AIMessage) as Rudder stores it: its text, its calls with their arguments as JSON, its usage. */
export function toModelReply(message: AIMessage): ModelReply {
  const usage = message.usage_metadata;
  return {
    content: message.text,
    toolCalls: (message.tool_calls ?? []).map((c) => ({ id: c.id ?? '', name: c.name, arguments: JSON.stringify(c.args) })),
    ...(usage ? { usage: { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens: usage.total_tokens } } : {}),
  };
}

/** A reply as the agent gets it back: a fresh AIMessage with the log's call ids (stored or just made), so its results answer those. */
export function toAIMessage(reply: ModelReply): AIMessage {
  return new AIMessage({
    content: reply.content,
    tool_calls: reply.toolCalls.map((c) => ({ id: c.id, name: c.name, args: parseArguments(c.arguments), type: 'tool_call' as const })),
    ...(reply.usage ? { usage_metadata: { input_tokens: reply.usage.promptTokens, output_tokens: reply.usage.completionTokens, total_tokens: reply.usage.totalTokens } } : {}),
  });
}

/**
 * The request's messages with each steer as LangChain's own user message (HumanMessage), right
 * after the ToolMessage of the last of its calls; a steer whose results the request no longer
 * holds (a middleware of the team's trimmed them) is left out, so no request starts at one.
 */
export function withSteers(messages: readonly BaseMessage[], steers: readonly Steer[]): BaseMessage[] {
  const request = [...messages];
  for (const steer of steers) {
    if (steer.afterCalls.length === 0) {
      request.push(new HumanMessage(steer.text));
      continue;
    }
    const at = request.findLastIndex((m) => ToolMessage.isInstance(m) && steer.afterCalls.includes(m.tool_call_id));
    if (at !== -1) request.splice(at + 1, 0, new HumanMessage(steer.text));
  }
  return request;
}

/** The results a request's state holds, by call id: `durable.model` stores any the agent made itself. */
export function resultsOf(messages: readonly BaseMessage[]): Map<string, string> {
  return new Map(messages.flatMap((m) => (ToolMessage.isInstance(m) ? [[m.tool_call_id, m.text] as const] : [])));
}

/** A call's arguments as LangChain holds them (an object); a person's edit or a model may give text that is no JSON object. */
export function parseArguments(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
