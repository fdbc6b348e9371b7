import { z } from 'zod';
import type { Tool, ToolContext } from '@rudder/agent';

/**
 * An MCP server an agent takes tools from (docs/agents.md, "Tools from MCP servers"): a stdio
 * server the worker starts (`command`), or a Streamable HTTP server by `url`. Only the tools
 * `tools` names are offered to the model, with the schema and description the server lists.
 */
export type McpServerDefinition = {
  /** 1-100 characters of [A-Za-z0-9._:-]; names the server in the worker's log, its metrics and the errors the model reads. */
  name: string;
  /** The allow-list: the names of the server's tools the agent may call. A name the server does not list is logged and left out. */
  tools: readonly string[];
  /** How long one call may take, in milliseconds; past it the call is cancelled and the model reads an error result. Default 60,000. */
  timeoutMs?: number;
  /** How long connecting (and listing its tools) may take, in milliseconds. Default 10,000. */
  connectTimeoutMs?: number;
  /** The wait before the first retry of a server that is down, in milliseconds, doubled after each failed attempt up to 30 s. Default 1,000. */
  retryMs?: number;
  /** Its tools whose calls wait for a person's approval (docs/agents.md, "Approvals"): `true` for all of them, or their names. Default: none. */
  needsApproval?: boolean | readonly string[];
  /** How long such a call waits for approval before it is denied as timed out, in milliseconds. Default: until decided. */
  approvalTimeout?: number;
} & (
  | {
      /** A stdio server: the worker starts `command` with `args`, and stops it on shutdown. */
      command: string;
      args?: readonly string[];
      /** Its environment (default: the MCP SDK's safe subset of the worker's: PATH, HOME, …). */
      env?: Record<string, string>;
      cwd?: string;
    }
  | {
      /** A Streamable HTTP server. */
      url: string;
      headers?: Record<string, string>;
    }
);

export const MCP_CALL_TIMEOUT_MS = 60_000;
export const MCP_CONNECT_TIMEOUT_MS = 10_000;
export const MCP_RETRY_MS = 1_000;
export const MCP_RETRY_MAX_MS = 30_000;

/** The `_meta` keys of every `tools/call` Rudder sends: the call id is the same on every run of the call, so a server can make its side effect exactly once by it. */
export const MCP_META = { callId: 'rudder/callId', conversation: 'rudder/conversation', turn: 'rudder/turn' } as const;

/** What a tool of an MCP server says of itself in `tools/list` (the part Rudder reads). */
export type ListedTool = { name: string; title?: string; description?: string; inputSchema: Record<string, unknown> };

/** A tool name the Chat Completions API takes. */
const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SERVER_NAME = /^[A-Za-z0-9._:-]{1,100}$/;

/** Throws, saying what is wrong, when a definition cannot run; `agent` names its agent in the message. */
export function checkMcpServer(server: McpServerDefinition, agent: string): void {
  const where = `TurnWorkerModule: agent ${agent}: MCP server ${JSON.stringify(server.name)}`;
  if (!SERVER_NAME.test(server.name)) throw new Error(`${where}: its name must be 1-100 characters of [A-Za-z0-9._:-]`);
  const command = 'command' in server && typeof server.command === 'string';
  const url = 'url' in server && typeof server.url === 'string';
  if (command === url) throw new Error(`${where}: give either command (a stdio server) or url (a Streamable HTTP server)`);
  if (url) {
    let protocol = '';
    try {
      protocol = new URL((server as { url: string }).url).protocol;
    } catch {
      throw new Error(`${where}: url is not a URL`);
    }
    if (protocol !== 'http:' && protocol !== 'https:') throw new Error(`${where}: url must be http or https`);
  }
  if (!Array.isArray(server.tools) || server.tools.length === 0) throw new Error(`${where}: tools must list the tools the agent may call (its allow-list)`);
  const badName = server.tools.find((n) => typeof n !== 'string' || !MODEL_TOOL_NAME.test(n));
  if (badName !== undefined) throw new Error(`${where}: tool name ${JSON.stringify(badName)} is not one a model can call (1-64 characters of [A-Za-z0-9_-])`);
  const approval = server.needsApproval;
  if (approval !== undefined && typeof approval !== 'boolean' && !(Array.isArray(approval) && approval.every((n) => server.tools.includes(n)))) {
    throw new Error(`${where}: needsApproval must be true, false, or names of tools on its allow-list`);
  }
  for (const [field, value] of [['timeoutMs', server.timeoutMs], ['connectTimeoutMs', server.connectTimeoutMs], ['retryMs', server.retryMs], ['approvalTimeout', server.approvalTimeout]] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) throw new Error(`${where}: ${field} must be a whole number of milliseconds, more than 0`);
  }
}

/**
 * The tools of a server an agent is offered: those of `listed` on the allow-list, in the
 * allow-list's order, less the names `taken` (the agent's own tools, or an earlier server's:
 * they win). Answers, too, what was left out and why, for the worker's log.
 */
export function allowedTools(listed: readonly ListedTool[], allow: readonly string[], taken: ReadonlySet<string>) {
  const byName = new Map(listed.map((t) => [t.name, t]));
  const offered: ListedTool[] = [];
  const missing: string[] = [];
  const shadowed: string[] = [];
  for (const name of allow) {
    const tool = byName.get(name);
    if (!tool) missing.push(name);
    else if (taken.has(name)) shadowed.push(name);
    else offered.push(tool);
  }
  return { offered, missing, shadowed };
}

/** What a `tools/call` answers, as far as Rudder reads it. */
export type CallResult = {
  content?: readonly { type: string; [key: string]: unknown }[];
  structuredContent?: unknown;
  isError?: boolean;
  toolResult?: unknown;
};

/**
 * A call's result as the text the model reads: its text blocks in order; an image or audio
 * block as a short marker (the model gets text only); a resource as its text, or a marker;
 * structured content as JSON when there is no content. `isError` results are an error the
 * model reads (`error: …`, as any failed tool's).
 */
export function resultText(result: CallResult): string {
  const parts = (result.content ?? []).map(blockText);
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  if (parts.length === 0 && result.toolResult !== undefined) parts.push(typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult));
  return parts.join('\n');
}

function blockText(block: { type: string; [key: string]: unknown }): string {
  switch (block.type) {
    case 'text':
      return String(block.text ?? '');
    case 'image':
    case 'audio':
      return `[${block.type}: ${String(block.mimeType ?? 'unknown type')}, not shown]`;
    case 'resource_link':
      return `[resource: ${String(block.uri ?? '')}${block.name ? ` (${String(block.name)})` : ''}]`;
    case 'resource': {
      const resource = (block.resource ?? {}) as { uri?: string; text?: string };
      return typeof resource.text === 'string' ? resource.text : `[resource: ${resource.uri ?? ''}, not text]`;
    }
    default:
      return `[${block.type} content]`;
  }
}

/** Thrown by an MCP tool whose call failed: the model reads `error: <message>`. */
export class McpCallError extends Error {}

/** Calls one tool of a server: `(name, args, context) => result`; rejects on a protocol error, a timeout, a closed connection or an abort. */
export type CallMcpTool = (name: string, args: Record<string, unknown>, context: ToolContext) => Promise<CallResult>;

/**
 * A listed tool as an agent's tool. The model sees the server's own schema (`inputSchema`, less
 * its `$schema` keyword); its calls wait for approval when the server's definition says so;
 * the arguments are checked to be a JSON object and the server validates the rest (its
 * refusal is an error result the model reads).
 */
export function mcpTool(server: string, listed: ListedTool, call: CallMcpTool, approval: Pick<McpServerDefinition, 'needsApproval' | 'approvalTimeout'> = {}): Tool {
  const { needsApproval, approvalTimeout } = approval;
  return {
    name: listed.name,
    needsApproval: Array.isArray(needsApproval) ? needsApproval.includes(listed.name) : needsApproval === true,
    ...(approvalTimeout === undefined ? {} : { approvalTimeout }),
    description: listed.description ?? listed.title ?? '',
    parameters: ARGUMENTS,
    inputSchema: withoutDialect(listed.inputSchema),
    run: async (args, context) => {
      const result = await call(listed.name, ARGUMENTS.parse(args), context);
      const text = resultText(result);
      if (result.isError) throw new McpCallError(`the tool ${listed.name} of MCP server ${server} failed: ${text}`);
      return text;
    },
  };
}

const ARGUMENTS = z.record(z.string(), z.unknown());

/** The schema less its `$schema` (the dialect it is written in): what a function's parameters are, as the Chat Completions API takes them. */
function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const parameters = { ...schema };
  delete parameters.$schema;
  return parameters;
}

/** The `_meta` of a call: its id (the same on every run of the call), its conversation and turn. */
export const callMeta = (context: ToolContext): Record<string, string> => ({
  [MCP_META.callId]: context.callId,
  [MCP_META.conversation]: context.conversation,
  [MCP_META.turn]: context.turn,
});

/** The wait before retry `attempt` (1-based) of a server that is down: `retryMs` doubled per attempt, at most 30 s. */
export const retryDelay = (retryMs: number, attempt: number): number => Math.min(MCP_RETRY_MAX_MS, retryMs * 2 ** Math.min(attempt - 1, 20));
