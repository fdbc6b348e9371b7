/**
 * A small MCP server over Streamable HTTP, the tests' own, built with the MCP SDK (started by
 * test/mcp-tools.e2e.spec.ts as its own process on `PORT`, so a test can SIGKILL it mid-call and
 * start it again on the same port). Each `tools/call` it gets is appended to `CALL_LOG` with
 * its `_meta` (`{event: 'call', tool, arguments, meta}`), each call cancelled by the client
 * with `{event: 'cancelled', tool, meta}`, and each session the client ends (`DELETE`) with
 * `{event: 'session ended'}`; every line has the server's `pid`.
 *
 * Tools:
 * - `note {text}`: keeps a note, exactly once by the call id of `_meta` (a rerun of the call
 *   answers the note it kept): `noted "<text>" as note <n>`;
 * - `wait_at {gate}`: waits at a gate of the scripted model (`POST /gates/{gate}/pass` on
 *   `GATES_URL`) until the test opens it, then answers `passed <gate>`: a call held open by
 *   construction; a cancelled call stops waiting.
 * `POST /control/tools/{name}` adds a tool of that name (answering `late <text>`) on every
 * session: the SDK tells each client `notifications/tools/list_changed`.
 */
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const port = Number(process.env.PORT);
const log = process.env.CALL_LOG ?? '/dev/null';
const gates = process.env.GATES_URL ?? '';
const record = (line: Record<string, unknown>) => appendFileSync(log, `${JSON.stringify({ ...line, pid: process.pid })}\n`);

/** The notes kept, by call id: a call run again answers what its first run kept. */
const notes = new Map<string, string>();
const lateTools: string[] = [];
const servers = new Map<string, McpServer>();

type Extra = { _meta?: Record<string, unknown>; signal: AbortSignal };

function serverOfSession(): McpServer {
  const server = new McpServer({ name: 'notes', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.registerTool('note', { description: 'Keeps a note.', inputSchema: { text: z.string() } }, async ({ text }, extra: Extra) => {
    record({ event: 'call', tool: 'note', arguments: { text }, meta: extra._meta });
    const callId = String(extra._meta?.['rudder/callId'] ?? randomUUID());
    if (!notes.has(callId)) notes.set(callId, `noted ${JSON.stringify(text)} as note ${notes.size + 1}`);
    return { content: [{ type: 'text', text: notes.get(callId)! }] };
  });
  server.registerTool('wait_at', { description: 'Waits until the named gate opens.', inputSchema: { gate: z.string() } }, async ({ gate }, extra: Extra) => {
    record({ event: 'call', tool: 'wait_at', arguments: { gate }, meta: extra._meta });
    const cancelled = () => record({ event: 'cancelled', tool: 'wait_at', meta: extra._meta });
    extra.signal.addEventListener('abort', cancelled, { once: true });
    const answer = await fetch(`${gates}/gates/${encodeURIComponent(gate)}/pass`, { method: 'POST', body: String(extra._meta?.['rudder/callId']), signal: extra.signal });
    extra.signal.removeEventListener('abort', cancelled);
    if (!answer.ok) throw new Error(`the gate ${gate} answered ${answer.status}`);
    return { content: [{ type: 'text', text: `passed ${gate}` }] };
  });
  for (const name of lateTools) addLateTool(server, name);
  return server;
}

function addLateTool(server: McpServer, name: string) {
  server.registerTool(name, { description: 'A tool added after the client connected.', inputSchema: { text: z.string() } }, async ({ text }, extra: Extra) => {
    record({ event: 'call', tool: name, arguments: { text }, meta: extra._meta });
    return { content: [{ type: 'text', text: `late ${text}` }] };
  });
}

const transports = new Map<string, StreamableHTTPServerTransport>();

async function mcp(req: IncomingMessage, res: ServerResponse) {
  const session = req.headers['mcp-session-id'];
  let transport = typeof session === 'string' ? transports.get(session) : undefined;
  if (!transport) {
    if (typeof session === 'string') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return;
    }
    const server = serverOfSession();
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        transports.set(id, created);
        servers.set(id, server);
      },
      onsessionclosed: () => record({ event: 'session ended' }),
    });
    created.onclose = () => {
      if (created.sessionId) {
        transports.delete(created.sessionId);
        servers.delete(created.sessionId);
      }
    };
    await server.connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  const control = /^\/control\/tools\/([\w-]+)$/.exec(req.url ?? '');
  if (control && req.method === 'POST') {
    lateTools.push(control[1]);
    for (const server of servers.values()) addLateTool(server, control[1]);
    res.writeHead(200).end();
    return;
  }
  if (req.url?.startsWith('/mcp')) {
    mcp(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
    return;
  }
  res.writeHead(404).end();
});
http.listen(port, '127.0.0.1', () => console.log(`notes MCP server listening on ${port}`));
