import type { AgentInputItem, ModelResponse, protocol } from '@openai/agents';
import type { ModelMessage, ModelReply, Steer } from '@rudder/agent';

/**
 * Conversions between Rudder's Chat Completions messages and replies and the OpenAI Agents
 * SDK's own items: what a run starts from, what a stored reply looks like to the framework, and
 * what a framework request holds.
 */

/** The framework's input items for Rudder's messages (earlier turns, this turn's prompt or the turn so far). */
export function toInputItems(messages: readonly ModelMessage[]): AgentInputItem[] {
  const names = new Map<string, string>();
  return messages.flatMap((message): AgentInputItem[] => {
    switch (message.role) {
      case 'system':
        return [{ role: 'system', content: message.content }];
      case 'user':
        return [{ role: 'user', content: message.content }];
      case 'assistant': {
        const calls = message.tool_calls ?? [];
        for (const call of calls) names.set(call.id, call.function.name);
        return [
          ...(message.content !== '' || calls.length === 0 ? [assistantItem(message.content)] : []),
          ...calls.map((c) => callItem({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        ];
      }
      case 'tool':
        return [resultItem(message.tool_call_id, names.get(message.tool_call_id) ?? '', message.content)];
    }
  });
}

/** A reply as the framework's model answers it: its text as an assistant message, its calls as function calls. */
export function toOutputItems(reply: ModelReply): protocol.OutputModelItem[] {
  return [...(reply.content !== '' || reply.toolCalls.length === 0 ? [assistantItem(reply.content)] : []), ...reply.toolCalls.map(callItem)];
}

/** Rudder's reply for the framework model's response: its text, its function calls, its usage. */
export function toReply(response: ModelResponse): ModelReply {
  let content = '';
  const toolCalls: ModelReply['toolCalls'] = [];
  for (const item of response.output) {
    if (item.type === 'message' && item.role === 'assistant') {
      for (const part of item.content) if (part.type === 'output_text') content += part.text;
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: item.callId, name: item.name, arguments: item.arguments });
    }
  }
  const usage = response.usage;
  return { content, toolCalls, usage: { promptTokens: usage.inputTokens, completionTokens: usage.outputTokens, totalTokens: usage.totalTokens } };
}

/** The text of a function call's output item, as Rudder stores results. */
export function outputText(output: protocol.FunctionCallResultItem['output']): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output) && output.type === 'text') return output.text;
  return JSON.stringify(output);
}

/** The results a request's items hold, by call id. */
export function resultsOf(items: readonly AgentInputItem[]): Map<string, string> {
  return new Map(items.flatMap((item) => (item.type === 'function_call_result' ? [[item.callId, outputText(item.output)] as const] : [])));
}

/**
 * The request's items with every function call answered right after its reply's calls, as the
 * Chat Completions API demands: a handoff's `inputFilter` may drop a call's output and keep the
 * call (the framework sends that as is, and the API refuses it). A dropped output the run knows
 * (`known`: the results it made or saw) is put back; a call with none is left out, and so is an
 * output whose call is gone.
 */
export function answeredCalls(items: readonly AgentInputItem[], known: ReadonlyMap<string, string>): AgentInputItem[] {
  const calls = new Set(items.flatMap((i) => (i.type === 'function_call' ? [i.callId] : [])));
  const results = new Set(items.flatMap((i) => (i.type === 'function_call_result' ? [i.callId] : [])));
  const out: AgentInputItem[] = [];
  for (const [index, item] of items.entries()) {
    if (item.type === 'function_call_result' && !calls.has(item.callId)) continue;
    if (item.type === 'function_call' && !results.has(item.callId) && !known.has(item.callId)) continue;
    out.push(item);
    if (item.type !== 'function_call' || items[index + 1]?.type === 'function_call') continue;
    // The end of a reply's calls: the outputs the filter dropped go here.
    for (let back = index; back >= 0 && items[back].type === 'function_call'; back--) {
      const call = items[back] as protocol.FunctionCallItem;
      const output = known.get(call.callId);
      if (!results.has(call.callId) && output !== undefined) out.push(resultItem(call.callId, call.name, output));
    }
  }
  return out;
}

/**
 * The request's items with each steer as the framework's own user message, right after the last
 * output of the calls it came after; a steer whose outputs the request does not hold is left
 * out (no request starts at a steered message).
 */
export function withSteers(items: readonly AgentInputItem[], steers: readonly Steer[]): AgentInputItem[] {
  const at = new Map<number, Steer[]>();
  for (const steer of steers) {
    const index = items.findLastIndex((i) => i.type === 'function_call_result' && steer.afterCalls.includes(i.callId));
    if (index !== -1) at.set(index, [...(at.get(index) ?? []), steer]);
  }
  return items.flatMap((item, index) => [item, ...(at.get(index) ?? []).map((s): AgentInputItem => ({ role: 'user', content: s.text }))]);
}

const assistantItem = (text: string): protocol.AssistantMessageItem => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });

const callItem = (call: { id: string; name: string; arguments: string }): protocol.FunctionCallItem => ({
  type: 'function_call',
  callId: call.id,
  name: call.name,
  arguments: call.arguments,
  status: 'completed',
});

const resultItem = (callId: string, name: string, text: string): protocol.FunctionCallResultItem => ({
  type: 'function_call_result',
  callId,
  name,
  status: 'completed',
  output: { type: 'text', text },
});
