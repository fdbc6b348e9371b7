import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Tool, ToolContext } from '@rudder/agent';
import type { Log } from '@rudder/runtime';
import {
  allowedTools,
  callMeta,
  McpCallError,
  mcpTool,
  MCP_CALL_TIMEOUT_MS,
  MCP_CONNECT_TIMEOUT_MS,
  MCP_RETRY_MS,
  retryDelay,
  type CallResult,
  type ListedTool,
  type McpServerDefinition,
} from './mcp-tools';

/** What a connection reports to the worker: whether it is connected, and each time it found the server down or lost it. */
export type McpConnectionMetrics = {
  mcpServerUp(agent: string, server: string, up: boolean): void;
  mcpServerDown(agent: string, server: string, how: 'down' | 'lost'): void;
};

export type McpConnectionOptions = {
  agent: string;
  server: McpServerDefinition;
  /** The agent's own tools' names: its own tool of a name wins over the server's. */
  ownTools: ReadonlySet<string>;
  /** Called whenever `tools` changed (connected, lost, the server's list changed). */
  changed(): void;
  /** Wraps each tool made (the worker's tracing). */
  wrap(tool: Tool): Tool;
  log: Log;
  metrics: McpConnectionMetrics;
};

/**
 * One agent's connection to one MCP server. Its `tools` are the allowed tools the server lists
 * while it is connected, and none while it is down: the agent runs without them meanwhile. A
 * server that cannot be reached (at start, or after the connection broke) is retried with a
 * backoff (`retryMs`, doubled per failed attempt, up to 30 s) until the worker shuts down; each
 * failure is logged and counted (`rudder_mcp_server_down_total`), and
 * `rudder_mcp_server_up` says whether it is connected. `tools/list_changed` lists the tools
 * again. Each call carries its call id in `_meta`, is cancelled (`notifications/cancelled`)
 * when the turn aborts, and fails — an error result the model reads — on the server's error,
 * past `timeoutMs`, or when the connection breaks under it.
 */
export class McpConnection {
  tools: readonly Tool[] = [];
  private client: Client | undefined;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  private listing: Promise<void> = Promise.resolve();
  private readonly log: Log;

  constructor(private readonly options: McpConnectionOptions) {
    this.log = options.log.child({ agent: options.agent, mcpServer: options.server.name });
    options.metrics.mcpServerUp(options.agent, options.server.name, false);
  }

  /** The first attempt: resolves once it connected or failed (then a retry is scheduled); never rejects. */
  start(): Promise<void> {
    return this.connect();
  }

  /** Stops retrying, and closes the connection: a stdio server is stopped, an HTTP server's session ended (`DELETE`). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client?.transport instanceof StreamableHTTPClientTransport) await client.transport.terminateSession().catch(() => undefined);
    await client?.close().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const { server } = this.options;
    const client = new Client({ name: 'rudder-turn-worker', version: '1' });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.list(client));
    client.onclose = () => this.lost(client, 'the connection closed');
    client.onerror = (error) => {
      // A message that does not parse is the server's mistake, and an HTTP error status fails its
      // own request (that call's result says so); neither is a broken connection. A session the
      // server no longer knows (404, it restarted) is.
      if (error instanceof SyntaxError || error.name === 'ZodError') this.log.warn('an MCP server sent a message that does not parse', { error: error.message });
      else if (error instanceof StreamableHTTPError && error.code !== 404) this.log.warn('an MCP server answered an error status', { error: error.message });
      else this.lost(client, error.message);
    };
    let connected = false;
    try {
      await client.connect(this.transport(), { timeout: server.connectTimeoutMs ?? MCP_CONNECT_TIMEOUT_MS });
      if (this.closed) throw new Error('the worker is shutting down');
      this.client = client;
      connected = true;
      await this.list(client, true);
    } catch (error) {
      // Once connected, a connection that broke while its tools were listed was `lost` already (and is retried).
      const lostAlready = connected && this.client !== client;
      if (this.client === client) this.client = undefined;
      await client.close().catch(() => undefined);
      if (!lostAlready) this.failed(describe(error));
      return;
    }
    if (this.client !== client) return;
    this.failures = 0;
    this.options.metrics.mcpServerUp(this.options.agent, server.name, true);
    this.log.info('MCP server connected', { tools: this.tools.map((t) => t.name) });
  }

  private transport(): Transport {
    const { server } = this.options;
    if ('url' in server) return new StreamableHTTPClientTransport(new URL(server.url), { requestInit: server.headers ? { headers: server.headers } : undefined });
    const transport = new StdioClientTransport({ command: server.command, args: server.args ? [...server.args] : undefined, env: server.env, cwd: server.cwd, stderr: 'pipe' });
    // The server's stderr (its own log) joins the worker's log line by line, so the worker's stays JSON lines.
    if (transport.stderr instanceof Readable) createInterface({ input: transport.stderr, crlfDelay: Infinity }).on('line', (line) => this.log.info('an MCP server wrote to stderr', { line: line.slice(0, 2000) }));
    return transport;
  }

  /**
   * Lists the server's tools (every page) and offers the allowed ones; one listing at a time.
   * `first`: the connection's own listing, whose failure fails the attempt; a later one (after
   * `tools/list_changed`) that fails keeps the tools offered and says so.
   */
  private list(client: Client, first = false): Promise<void> {
    const listing = this.listing.then(async () => {
      const { server, ownTools } = this.options;
      const listed: ListedTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: server.connectTimeoutMs ?? MCP_CONNECT_TIMEOUT_MS });
        listed.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      if (client !== this.client) return;
      const { offered, missing, shadowed } = allowedTools(listed, server.tools, ownTools);
      if (missing.length > 0) this.log.warn('an MCP server does not list tools of its allow-list; they are left out', { missing });
      if (shadowed.length > 0) this.log.warn("an MCP server's tools have the names of the agent's own tools, which win", { shadowed });
      this.tools = offered.map((tool) => this.options.wrap(mcpTool(server.name, tool, (name, args, context) => this.call(client, name, args, context), server)));
      if (!first) this.log.info("an MCP server's tools changed", { tools: this.tools.map((t) => t.name) });
      this.options.changed();
    });
    this.listing = listing.catch(() => undefined);
    return first
      ? listing
      : listing.catch((error: unknown) => this.log.warn("listing an MCP server's tools again failed; the tools listed before stay offered", { error: describe(error) }));
  }

  private async call(client: Client, name: string, args: Record<string, unknown>, context: ToolContext): Promise<CallResult> {
    const { server } = this.options;
    if (client !== this.client) throw new McpCallError(`the MCP server ${server.name} is not connected: the call of its tool ${name} was not made`);
    try {
      return (await client.callTool({ name, arguments: args, _meta: callMeta(context) }, undefined, {
        signal: context.signal,
        timeout: server.timeoutMs ?? MCP_CALL_TIMEOUT_MS,
      })) as CallResult;
    } catch (error) {
      if (context.signal.aborted) throw error;
      throw new McpCallError(`the tool ${name} of MCP server ${server.name} failed: ${describe(error)}`);
    }
  }

  /** The connection broke: its tools are left out, the calls in flight fail (closing rejects them), and it is retried. */
  private lost(client: Client, reason: string): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    this.tools = [];
    this.options.changed();
    void client.close().catch(() => undefined);
    this.failed(reason, 'lost');
  }

  private failed(reason: string, how: 'down' | 'lost' = 'down'): void {
    const { agent, server, metrics } = this.options;
    if (this.closed) return;
    this.failures++;
    const retryInMs = retryDelay(server.retryMs ?? MCP_RETRY_MS, this.failures);
    metrics.mcpServerUp(agent, server.name, false);
    metrics.mcpServerDown(agent, server.name, how);
    this.log.warn(
      how === 'lost' ? 'lost the connection to an MCP server: the agent runs without its tools until it is back' : 'an MCP server is down: the agent runs without its tools until it is up',
      { reason, retryInMs },
    );
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), retryInMs);
    this.retry.unref();
  }
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
