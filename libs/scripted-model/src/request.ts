import type { ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';

/**
 * A chat completion request body, typed as the openai package types what its client sends,
 * so tests can build and inspect requests with the same types the worker uses.
 */
export type ChatCompletionCreateBody = ChatCompletionCreateParamsBase;
export type ChatMessage = ChatCompletionMessageParam;

/**
 * The shallow check behind that type: the fields this server and its helpers read. Unknown
 * fields pass through untouched (the stored body is the JSON as received), and anything the
 * real API would reject outright here is a 400 rather than a crash in a script.
 */
const Message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional(),
  tool_calls: z.array(z.looseObject({ id: z.string(), type: z.string() })).optional(),
  tool_call_id: z.string().optional(),
});
const Body = z.looseObject({
  model: z.string(),
  messages: z.array(Message).min(1),
  stream: z.boolean().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).optional(),
});

/** Parses a raw request body; on failure, the message to answer with a 400. */
export function parseBody(raw: string): { body: ChatCompletionCreateBody } | { problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { problem: `We could not parse the JSON body of your request. (${reason})` };
  }
  const parsed = Body.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`);
    return { problem: `Invalid request body: ${issues.join('; ')}` };
  }
  const problem = toolSequenceProblem(parsed.data.messages);
  // Checked above as far as this server relies on it; the rest is the client's, trusted as sent.
  return problem ? { problem } : { body: json as ChatCompletionCreateBody };
}

type CheckedMessage = z.infer<typeof Message>;

/**
 * The real API rejects conversations where an assistant message's tool calls are not answered
 * by `tool` messages directly after it, or where a `tool` message answers no such call. Mirroring
 * that here makes a worker bug (e.g. a steer message slipped between a tool call and its result)
 * fail in tests instead of only against the real model.
 */
export function toolSequenceProblem(messages: CheckedMessage[]): string | undefined {
  // Ids of the latest assistant message's tool calls not yet answered by a `tool` message.
  let pending = new Set<string>();
  let answerable = false; // true from an assistant message with tool calls to the next other message
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!answerable || message.tool_call_id === undefined || !pending.delete(message.tool_call_id)) {
        return (
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'" +
          ` (tool_call_id ${message.tool_call_id ?? 'missing'}).`
        );
      }
      continue;
    }
    if (pending.size > 0) return unansweredProblem(pending);
    pending = new Set(message.role === 'assistant' ? (message.tool_calls ?? []).map((c) => c.id) : []);
    answerable = pending.size > 0;
  }
  return pending.size > 0 ? unansweredProblem(pending) : undefined;
}

const unansweredProblem = (ids: Set<string>) =>
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'." +
  ` The following tool_call_ids did not have response messages: ${[...ids].join(', ')}`;
