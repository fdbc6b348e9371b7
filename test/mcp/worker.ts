/**
 * A turn worker whose agents take tools from MCP servers (started by test/mcp-tools.e2e.spec.ts
 * as its own process):
 * - `mcp`: `echo`, `get-sum` and `trigger-long-running-operation` of `@modelcontextprotocol/server-everything` (a real MCP server,
 *   which the worker starts over stdio from node_modules), and `note`, `wait_at` and
 *   `late_note` (not listed until the test adds it) of the tests' own Streamable HTTP server
 *   at NOTES_MCP_URL (test/mcp/notes-server.ts);
 * - `impatient`: `wait_at` of the same server, with calls that time out after 1 s;
 * - `late`: `note` of a server at LATE_MCP_URL, which is down when the worker starts.
 */
import 'reflect-metadata';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog } from '@rudder/runtime';
import { defaultAgent, turnWorkerTransport, TurnWorkerModule, type AgentDefinition, type McpServerDefinition } from '@rudder/turn-worker';

const everything: McpServerDefinition = {
  name: 'everything',
  command: process.execPath,
  args: [join(process.cwd(), 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
  tools: ['echo', 'get-sum', 'trigger-long-running-operation'],
};
const notes = (name: string, url: string, tools: string[], more: Partial<McpServerDefinition> = {}): McpServerDefinition => ({ name, url, tools, retryMs: 200, ...more });

/** The default agent without its plan: these agents' tools are exactly their own and their servers'. */
const withoutPlan: AgentDefinition = { ...defaultAgent, todos: false };
const agents: AgentDefinition[] = [
  { ...withoutPlan, name: 'mcp', mcp: [everything, notes('notes', process.env.NOTES_MCP_URL!, ['note', 'wait_at', 'late_note'])] },
  { ...withoutPlan, name: 'impatient', mcp: [notes('notes', process.env.NOTES_MCP_URL!, ['wait_at'], { timeoutMs: 1000 })] },
  { ...withoutPlan, name: 'late', mcp: [notes('late', process.env.LATE_MCP_URL!, ['note'], { retryMs: 100 })] },
  // Its server's `note` waits for a person's approval.
  { ...withoutPlan, name: 'careful', mcp: [notes('notes', process.env.NOTES_MCP_URL!, ['note', 'wait_at'], { needsApproval: ['note'] })] },
];

@Module({ imports: [TurnWorkerModule.forRoot({ agents })] })
class McpWorkerModule {}

const app = await NestFactory.createMicroservice(McpWorkerModule, { strategy: turnWorkerTransport(), logger: ['error', 'warn'] });
await app.listen();
closeOnSignals(() => app.close(), createLog('turn-worker'));
