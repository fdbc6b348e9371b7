import { describe, expect, it } from 'vitest';
import { needsApproval, runToolCall, toolSpec, type ToolContext } from '@rudder/agent';
import { allowedTools, callMeta, checkMcpServer, mcpTool, resultText, retryDelay, type CallMcpTool, type ListedTool, type McpServerDefinition } from './mcp-tools';

const listed = (name: string): ListedTool => ({ name, description: `the ${name} tool`, inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } });
const context: ToolContext = {
  conversation: 'c/1',
  turn: 't1',
  callId: 'call_1',
  subject: 'alice',
  signal: new AbortController().signal,
  windDown: new AbortController().signal,
  pending: 0,
  queued: false,
};

describe('the tools of an MCP server an agent is offered', () => {
  it('are those on its allow-list that the server lists, in the allow-list’s order; a name the server lacks or the agent’s own tool has is left out, and said', () => {
    const { offered, missing, shadowed } = allowedTools([listed('b'), listed('a'), listed('wait'), listed('secret')], ['a', 'b', 'gone', 'wait'], new Set(['wait']));
    expect(offered.map((t) => t.name)).toEqual(['a', 'b']);
    expect(missing).toEqual(['gone']);
    expect(shadowed).toEqual(['wait']);
  });

  it('are described to the model by the schema and description the server lists (less its $schema keyword)', () => {
    const tool = mcpTool('notes', { ...listed('note'), inputSchema: { ...listed('note').inputSchema, $schema: 'http://json-schema.org/draft-07/schema#' } }, async () => ({ content: [] }));
    expect(toolSpec(tool)).toEqual({ type: 'function', function: { name: 'note', description: 'the note tool', parameters: listed('note').inputSchema } });
  });

  it('wait for approval when the server definition says so: all of its tools, or those it names; with its timeout', async () => {
    const call: CallMcpTool = async () => ({ content: [] });
    const asks = (needsApproval: McpServerDefinition['needsApproval'], name: string) =>
      needsApproval_(mcpTool('notes', listed(name), call, { needsApproval, approvalTimeout: 5000 }));
    const needsApproval_ = (tool: ReturnType<typeof mcpTool>) => needsApproval([tool], { name: tool.name, arguments: '{"text":"x"}' }, context);
    expect(await asks(true, 'note')).toBe(true);
    expect(await asks(['erase'], 'erase')).toBe(true);
    expect(await asks(['erase'], 'note')).toBe(false);
    expect(await asks(undefined, 'note')).toBe(false);
    expect(mcpTool('notes', listed('erase'), call, { needsApproval: true, approvalTimeout: 5000 }).approvalTimeout).toBe(5000);
    const server = { name: 'notes', url: 'http://127.0.0.1:1/mcp', tools: ['note'] };
    expect(() => checkMcpServer({ ...server, needsApproval: ['erase'] }, 'a')).toThrow(/needsApproval must be/);
    expect(() => checkMcpServer({ ...server, needsApproval: ['note'], approvalTimeout: 0 }, 'a')).toThrow(/approvalTimeout must be/);
  });
});

describe('a call of an MCP tool', () => {
  it('sends the arguments and, in _meta, the call id, the conversation and the turn', async () => {
    const calls: Parameters<CallMcpTool>[] = [];
    const tool = mcpTool('notes', listed('note'), async (...args) => (calls.push(args), { content: [{ type: 'text', text: 'kept' }] }));
    expect(await runToolCall([tool], { name: 'note', arguments: '{"text":"milk"}' }, context)).toEqual({ result: 'kept', isError: false });
    expect(calls).toEqual([['note', { text: 'milk' }, context]]);
    expect(callMeta(context)).toEqual({ 'rudder/callId': 'call_1', 'rudder/conversation': 'c/1', 'rudder/turn': 't1' });
  });

  it('answers an error result, a failed call, and arguments that are not an object as errors the model reads', async () => {
    const failing = mcpTool('notes', listed('note'), async () => ({ content: [{ type: 'text', text: 'no such note' }], isError: true }));
    expect(await runToolCall([failing], { name: 'note', arguments: '{"text":"x"}' }, context)).toEqual({ result: 'error: the tool note of MCP server notes failed: no such note', isError: true });
    const broken = mcpTool('notes', listed('note'), async () => Promise.reject(new Error('the tool note of MCP server notes failed: MCP error -32001: Request timed out')));
    expect(await runToolCall([broken], { name: 'note', arguments: '{}' }, context)).toEqual({ result: 'error: the tool note of MCP server notes failed: MCP error -32001: Request timed out', isError: true });
    expect((await runToolCall([broken], { name: 'note', arguments: '[1]' }, context)).result).toMatch(/^error: invalid arguments/);
  });

  it('is not answered when its turn aborts: the abort propagates, so nothing is stored for it', async () => {
    const aborting = new AbortController();
    const tool = mcpTool('notes', listed('note'), async (_name, _args, { signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))));
    const running = runToolCall([tool], { name: 'note', arguments: '{"text":"x"}' }, { ...context, signal: aborting.signal });
    aborting.abort(new Error('stopped'));
    await expect(running).rejects.toThrow('stopped');
  });
});

describe("an MCP result's text", () => {
  it('is its text blocks in order, with markers for what the model cannot read, and structured content when there is no content', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inside' } },
          { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAAA' } },
          { type: 'resource_link', uri: 'file:///b', name: 'b' },
          { type: 'text', text: 'two' },
        ],
      }),
    ).toBe('one\n[image: image/png, not shown]\ninside\n[resource: file:///a.bin, not text]\n[resource: file:///b (b)]\ntwo');
    expect(resultText({ content: [], structuredContent: { sum: 3 } })).toBe('{"sum":3}');
    expect(resultText({ content: [] })).toBe('');
  });
});

describe('an MCP server’s definition', () => {
  const ok: McpServerDefinition = { name: 'notes', url: 'http://127.0.0.1:1/mcp', tools: ['note'] };
  it('is refused at start-up when it cannot run, saying why', () => {
    expect(() => checkMcpServer(ok, 'a')).not.toThrow();
    expect(() => checkMcpServer({ name: 'e', command: 'node', tools: ['echo'] }, 'a')).not.toThrow();
    expect(() => checkMcpServer({ ...ok, name: 'no spaces' }, 'a')).toThrow(/its name must be/);
    expect(() => checkMcpServer({ ...ok, tools: [] }, 'a')).toThrow(/allow-list/);
    expect(() => checkMcpServer({ ...ok, tools: ['a b'] }, 'a')).toThrow(/is not one a model can call/);
    expect(() => checkMcpServer({ ...ok, url: 'ftp://x' }, 'a')).toThrow(/http or https/);
    expect(() => checkMcpServer({ ...ok, url: 'nowhere' }, 'a')).toThrow(/not a URL/);
    expect(() => checkMcpServer({ ...ok, command: 'node' } as McpServerDefinition, 'a')).toThrow(/either command/);
    expect(() => checkMcpServer({ ...ok, timeoutMs: 0 }, 'a')).toThrow(/timeoutMs must be/);
  });
});

describe('the retries of a server that is down', () => {
  it('wait retryMs, doubled per failed attempt, at most 30 s', () => {
    expect([1, 2, 3, 4].map((n) => retryDelay(1000, n))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelay(1000, 6)).toBe(30_000);
    expect(retryDelay(1000, 1_000)).toBe(30_000);
  });
});
