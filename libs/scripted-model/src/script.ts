import type { ChatCompletionToolMessageParam } from 'openai/resources/chat/completions';
import type { ChatCompletionCreateBody, ChatMessage } from './request';

export type { ChatCompletionCreateBody, ChatMessage };

export type ToolCallReply = {
  /** Defaults to `call_<n>`, n counting up per server. */
  id?: string;
  name: string;
  /** Always JSON-serialized by the server, so give the value, not a JSON string. */
  arguments: unknown;
};

export type ScriptedReply = {
  /** Assistant text; may be empty when tool calls are given. */
  content?: string;
  toolCalls?: ToolCallReply[];
  /** Wait before the first byte (headers included); cut short if the client disconnects. */
  delayMs?: number;
  /** Wait between streamed chunks. */
  tokenDelayMs?: number;
  /**
   * Hold the reply at this gate until the test opens it (`ScriptedModel.gate(name).open()` or
   * `POST /gates/{name}/open`): before the first byte (after `delayMs`), or — when streaming and
   * `gateAfterChunks` is set — after that many chunks were sent. See gates.ts.
   */
  gate?: string;
  gateAfterChunks?: number;
  /** When either is set (status >= 400 or an error message), answer an OpenAI-shaped HTTP error; status defaults to 500. */
  status?: number;
  error?: string;
};

/**
 * One chat completion request as received: the validated JSON body, when it arrived (ms since
 * epoch), and its size: its prompt tokens as this model counts them (`promptTokens`), which
 * its replies report as their usage's `prompt_tokens` (the server sets it on every request it
 * receives; a request a test makes up may leave it out).
 */
export type ModelRequest = { body: ChatCompletionCreateBody; receivedAt: number; tokens?: number };

export type Script = (request: ModelRequest) => ScriptedReply | Promise<ScriptedReply>;

/** The text of a message: its string content, or its text parts joined; '' when there is none. */
export function messageText(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export const lastMessage = (request: ModelRequest): ChatMessage | undefined => request.body.messages.at(-1);

/** The texts of all user messages, oldest first. */
export const userTexts = (request: ModelRequest): string[] =>
  request.body.messages.filter((m) => m.role === 'user').map(messageText);

/** The text of the last user message, '' if there is none. */
export const lastUserText = (request: ModelRequest): string => userTexts(request).at(-1) ?? '';

/** The `tool` messages after the last assistant message: the results the model is now asked to use. */
export function toolResults(request: ModelRequest): ChatCompletionToolMessageParam[] {
  const messages = request.body.messages;
  const lastAssistant = messages.findLastIndex((m) => m.role === 'assistant');
  return messages.slice(lastAssistant + 1).filter((m): m is ChatCompletionToolMessageParam => m.role === 'tool');
}

/** The name of the tool a `tool` message answers, found in the assistant tool call it responds to. */
export function toolNameOf(request: ModelRequest, result: ChatCompletionToolMessageParam): string | undefined {
  for (const message of request.body.messages) {
    if (message.role !== 'assistant') continue;
    const call = message.tool_calls?.find((c) => c.id === result.tool_call_id);
    if (call) return call.type === 'function' ? call.function.name : call.custom.name;
  }
  return undefined;
}

/** Whether the request offers a function tool with this name. */
export const offersTool = (request: ModelRequest, name: string): boolean =>
  (request.body.tools ?? []).some((tool) => tool.type === 'function' && tool.function.name === name);

type ReplyOptions = Omit<ScriptedReply, 'content' | 'toolCalls' | 'status' | 'error'>;

/** Short constructors for scripts: `reply.text('hi')`, `reply.tools([{ name: 'wait', arguments: { ms: 10 } }])`. */
export const reply = {
  text: (content: string, options: ReplyOptions = {}): ScriptedReply => ({ ...options, content }),
  tools: (toolCalls: ToolCallReply[], options: ReplyOptions & { content?: string } = {}): ScriptedReply => ({
    ...options,
    toolCalls,
  }),
  error: (status: number, error = `scripted error ${status}`, options: ReplyOptions = {}): ScriptedReply => ({
    ...options,
    status,
    error,
  }),
};
