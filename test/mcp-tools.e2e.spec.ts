import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastMessage, lastUserText, reply, type ModelRequest, type Script } from '@rudder/scripted-model';
import { answered, freePort, startStack, started, WAIT, withTimeout, type Stack, type WorkerProcess } from './stack';
import { gateName, testScript } from './scripts';
import { metricsUrlOf, sample, scrape } from './prometheus';
import { readEvents } from './sse';
import { execFileSync } from 'node:child_process';

/**
 * MCP tools (SPEC § Standard doors; docs/agents.md, "Tools from MCP servers"): the agents of
 * test/mcp/worker.ts, in a worker process of their own, take tools from
 * `@modelcontextprotocol/server-everything` over stdio and from the tests' own Streamable HTTP
 * server (test/mcp/notes-server.ts, its own process), which logs each call's `_meta`.
 *
 * The model: `call <tool> <json>` calls that tool with those arguments (and answers
 * `after <results>: <text>` after its result, as test/scripts.ts does); `which tools` answers
 * the names of the tools its request offered.
 */
const script: Script = (request) => {
  const text = lastUserText(request);
  const call = /^call (\S+) (\{.*\})$/.exec(text);
  if (call && lastMessage(request)?.role !== 'tool') return reply.tools([{ name: call[1], arguments: JSON.parse(call[2]) as Record<string, unknown> }], { content: `calling ${call[1]}` });
  if (text === 'which tools') return reply.text(`tools: ${offered(request).join(',')}`);
  return testScript(request);
};

const offered = (request: ModelRequest) => (request.body.tools ?? []).flatMap((t) => (t.type === 'function' ? [t.function.name] : []));

type Logged = { event: 'call' | 'cancelled' | 'session ended'; tool?: string; arguments?: Record<string, unknown>; meta?: Record<string, unknown>; pid: number };
const callLog = join(mkdtempSync(join(tmpdir(), 'rudder-mcp-')), 'calls.jsonl');
const logged = (): Logged[] => (existsSync(callLog) ? readFileSync(callLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Logged) : []);
const loggedIn = (conversation: string) => logged().filter((l) => l.meta?.['rudder/conversation'] === conversation);

/** The tests' own MCP server in a process of its own on `port` (the same across restarts). */
function notesServer(port: number, gatesUrl: string) {
  let child: ChildProcess | undefined;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async start() {
      const running = spawn(process.execPath, ['--import', 'tsx', 'test/mcp/notes-server.ts'], {
        env: { ...process.env, PORT: String(port), CALL_LOG: callLog, GATES_URL: gatesUrl },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      child = running;
      let output = '';
      await withTimeout(
        new Promise<void>((resolve, reject) => {
          running.stdout!.on('data', (chunk: Buffer) => {
            output += chunk.toString();
            if (output.includes('listening')) resolve();
          });
          running.once('exit', (code) => reject(new Error(`the notes server exited (${code}): ${output}`)));
        }),
        30_000,
        () => `the notes server did not start: ${output}`,
      );
    },
    pid: () => child?.pid,
    async kill() {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const gone = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await gone;
    },
  };
}

let stack: Stack;
let worker: WorkerProcess;
let notes: ReturnType<typeof notesServer>;
let late: ReturnType<typeof notesServer>;
let workerEnv: Record<string, string>;

beforeAll(async () => {
  stack = await startStack({ script, workers: 0, workerEntry: 'test/mcp/worker.ts' });
  const gatesUrl = stack.env.OPENAI_BASE_URL.replace(/\/v1\/?$/, '');
  notes = notesServer(await freePort(), gatesUrl);
  late = notesServer(await freePort(), gatesUrl);
  await notes.start();
  workerEnv = { NOTES_MCP_URL: notes.url, LATE_MCP_URL: late.url, METRICS_PORT: '0' };
  worker = await stack.startWorker(workerEnv);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await notes?.kill();
  await late?.kill();
});

const key = (name: string) => `mcp/${name}-${Math.random().toString(36).slice(2, 8)}`;
/** The model request that carries the results of the calls the reply to `text` made. */
const requestAfter = (text: string) => stack.model.requests.find((r) => lastMessage(r)?.role === 'tool' && lastUserText(r) === text);
const toolMessages = (request: ModelRequest) => request.body.messages.filter((m) => m.role === 'tool') as { tool_call_id: string; content: string }[];
/** The worker's log, its JSON lines parsed. */
const logLines = (of: WorkerProcess) => of.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
const mcpUp = async (agent: string, server: string) => sample(await scrape(metricsUrlOf(worker)), 'rudder_mcp_server_up', { agent, server });

describe('MCP tools', () => {
  it('a server down at start leaves the agent running without its tools, says so in the log and a metric, and is retried', async () => {
    const { client } = stack;
    const conversation = key('late');
    expect(logLines(worker)).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'an MCP server is down: the agent runs without its tools until it is up', agent: 'late', mcpServer: 'late' }));
    expect(await mcpUp('late', 'late')).toBe(0);
    expect(sample(await scrape(metricsUrlOf(worker)), 'rudder_mcp_server_down_total', { agent: 'late', server: 'late', how: 'down' })).toBeGreaterThanOrEqual(1);
    await client.chat(conversation, { text: 'which tools', id: 'down', agent: 'late' });
    expect(await answered(client, conversation, 'down')).toMatchObject({ status: 'completed', content: 'tools: wait' });

    await late.start();
    // Retried with a backoff (100 ms doubled per attempt since the worker started, at most 30 s): the next attempt connects.
    await vi.waitFor(async () => expect(await mcpUp('late', 'late')).toBe(1), { ...WAIT, timeout: 45_000 });
    await client.chat(conversation, { text: 'call note {"text":"at last"}', id: 'up' });
    expect(await answered(client, conversation, 'up')).toMatchObject({ status: 'completed', content: 'calling note\n\nafter noted "at last" as note 1: call note {"text":"at last"}' });
  }, 90_000);

  it('a tool of server-everything over stdio and one of an HTTP server are answered, with the schemas the servers list; the server gets the call id in _meta', async () => {
    const { client } = stack;
    const conversation = key('answered');
    await client.chat(conversation, { text: 'call echo {"message":"hello"}', id: 'e', agent: 'mcp' });
    expect(await answered(client, conversation, 'e')).toMatchObject({ status: 'completed', content: 'calling echo\n\nafter Echo: hello: call echo {"message":"hello"}' });
    expect(logLines(worker)).toContainEqual(expect.objectContaining({ msg: 'an MCP server wrote to stderr', agent: 'mcp', mcpServer: 'everything', line: 'Starting default (STDIO) server...' }));
    const first = stack.model.requests.find((r) => lastUserText(r) === 'call echo {"message":"hello"}')!;
    expect(offered(first)).toEqual(['wait', 'echo', 'get-sum', 'trigger-long-running-operation', 'note', 'wait_at']);
    const echo = first.body.tools!.find((t) => t.type === 'function' && t.function.name === 'echo');
    expect(echo).toEqual({ type: 'function', function: { name: 'echo', description: 'Echoes back the input string', parameters: { type: 'object', properties: { message: { type: 'string', description: 'Message to echo' } }, required: ['message'] } } });

    await client.chat(conversation, { text: 'call note {"text":"milk"}', id: 'n' });
    const turn = await answered(client, conversation, 'n');
    expect(turn).toMatchObject({ status: 'completed', content: 'calling note\n\nafter noted "milk" as note 1: call note {"text":"milk"}' });
    const [result] = toolMessages(requestAfter('call note {"text":"milk"}')!).slice(-1);
    const calls = loggedIn(conversation).filter((l) => l.tool === 'note');
    expect(calls).toEqual([expect.objectContaining({ event: 'call', arguments: { text: 'milk' }, meta: { 'rudder/callId': result.tool_call_id, 'rudder/conversation': conversation, 'rudder/turn': turn.id } })]);
  });

  it("a server's tool that needs approval is called only once a person approved it, once, with the call id in _meta", async () => {
    const { client } = stack;
    const conversation = key('approval');
    await client.chat(conversation, { text: 'call note {"text":"eggs"}', id: 'a', agent: 'careful' });
    const [waiting] = await vi.waitFor(async () => {
      const { awaiting } = await client.status(conversation);
      if (awaiting.length === 0) throw new Error('no call waits yet');
      return awaiting;
    }, WAIT);
    expect(waiting).toMatchObject({ tool: 'note', arguments: '{"text":"eggs"}' });
    expect(loggedIn(conversation)).toEqual([]);
    await client.approve(conversation, waiting.approvalId);
    const turn = await answered(client, conversation, 'a');
    expect(turn.status).toBe('completed');
    expect(turn.content).toMatch(/^calling note\n\nafter noted "eggs" as note \d+: call note \{"text":"eggs"\}$/);
    expect(loggedIn(conversation).filter((l) => l.tool === 'note')).toEqual([expect.objectContaining({ arguments: { text: 'eggs' }, meta: expect.objectContaining({ 'rudder/callId': waiting.callId }) })]);
  });

  it("a server's error is a result the model reads, and the turn goes on", async () => {
    const { client } = stack;
    const conversation = key('error');
    await client.chat(conversation, { text: 'call get-sum {"a":1,"b":"two"}', id: 'g', agent: 'mcp' });
    const turn = await answered(client, conversation, 'g');
    expect(turn.status).toBe('completed');
    const [result] = toolMessages(requestAfter('call get-sum {"a":1,"b":"two"}')!);
    expect(result.content).toMatch(/^error: the tool get-sum of MCP server everything failed: MCP error -32602: Input validation error/);
    expect(turn.content).toBe(`calling get-sum\n\nafter ${result.content}: call get-sum {"a":1,"b":"two"}`);
  });

  it("a steer sent while an MCP tool's call runs lands: the model's next request has it right after the tool's result", async () => {
    const { client, model } = stack;
    const conversation = key('steer');
    const gate = gateName('mcp-steer');
    const text = `call wait_at {"gate":"${gate}"}`;
    await client.chat(conversation, { text, id: 'w', agent: 'mcp' });
    const turn = await started(client, conversation, 'w');
    await model.gate(gate).reached();
    expect(await client.steer(conversation, { text: 'and then tea', id: 's' })).toEqual({ id: 's', turn: turn.id, landed: true });
    model.gate(gate).open();
    expect(await answered(client, conversation, 'w')).toMatchObject({ status: 'completed', steered: [{ id: 's', text: 'and then tea' }], content: `calling wait_at\n\nanswer to and then tea` });
    const next = model.requests.find((r) => lastUserText(r) === 'and then tea')!;
    expect(next.body.messages.slice(-2)).toMatchObject([{ role: 'tool', content: `passed ${gate}` }, { role: 'user', content: 'and then tea' }]);
  });

  it('a stopped turn cancels its MCP request: the server gets notifications/cancelled for the call', async () => {
    const { client, model } = stack;
    const conversation = key('stop');
    const gate = gateName('mcp-stop');
    await client.chat(conversation, { text: `call wait_at {"gate":"${gate}"}`, id: 'w', agent: 'mcp' });
    const turn = await started(client, conversation, 'w');
    await model.gate(gate).reached();
    await client.stop(conversation, { turn: turn.id });
    expect(await answered(client, conversation, 'w')).toMatchObject({ status: 'stopped' });
    const [call] = loggedIn(conversation);
    await vi.waitFor(() => expect(loggedIn(conversation)).toEqual([call, expect.objectContaining({ event: 'cancelled', tool: 'wait_at', meta: call.meta })]), WAIT);
  });

  it('a call past its timeout is cancelled and answered with an error result, and the turn goes on', async () => {
    const { client } = stack;
    const conversation = key('timeout');
    const text = `call wait_at {"gate":"${gateName('never')}"}`;
    await client.chat(conversation, { text, id: 'w', agent: 'impatient' });
    const turn = await answered(client, conversation, 'w');
    const [result] = toolMessages(requestAfter(text)!);
    expect(result.content).toBe('error: the tool wait_at of MCP server notes failed: MCP error -32001: Request timed out');
    expect(turn).toMatchObject({ status: 'completed', content: `calling wait_at\n\nafter ${result.content}: ${text}` });
    await vi.waitFor(() => expect(loggedIn(conversation).map((l) => l.event)).toEqual(['call', 'cancelled']), WAIT);
  });

  it("tools/list_changed is followed: a tool the server adds on the allow-list is offered and answered", async () => {
    const { client } = stack;
    const conversation = key('list-changed');
    await client.chat(conversation, { text: 'which tools', id: 'before', agent: 'mcp' });
    expect(await answered(client, conversation, 'before')).toMatchObject({ content: 'tools: wait,echo,get-sum,trigger-long-running-operation,note,wait_at' });
    expect((await fetch(notes.url.replace(/\/mcp$/, '/control/tools/late_note'), { method: 'POST' })).status).toBe(200);
    await vi.waitFor(() => expect(logLines(worker)).toContainEqual(expect.objectContaining({ msg: "an MCP server's tools changed", agent: 'mcp', mcpServer: 'notes', tools: ['note', 'wait_at', 'late_note'] })), WAIT);
    await client.chat(conversation, { text: 'call late_note {"text":"news"}', id: 'after' });
    expect(await answered(client, conversation, 'after')).toMatchObject({ status: 'completed', content: 'calling late_note\n\nafter late news: call late_note {"text":"news"}' });
  });

  it('a worker killed (SIGKILL) during an MCP call: the next worker runs the call again with the same call id, and the turn completes', async () => {
    const { client, model } = stack;
    const conversation = key('kill');
    const gate = gateName('mcp-kill');
    await client.chat(conversation, { text: `call wait_at {"gate":"${gate}"}`, id: 'w', agent: 'mcp' });
    await model.gate(gate).reached();
    await worker.kill('SIGKILL');
    worker = await stack.startWorker(workerEnv);
    await model.gate(gate).reached(2);
    model.gate(gate).open();
    expect(await answered(client, conversation, 'w', 60_000)).toMatchObject({ status: 'completed', content: `calling wait_at\n\nafter passed ${gate}: call wait_at {"gate":"${gate}"}` });
    const runs = loggedIn(conversation).filter((l) => l.event === 'call');
    expect(runs).toHaveLength(2);
    expect(runs[1].meta).toEqual(runs[0].meta);
    expect(String(runs[0].meta?.['rudder/callId'])).not.toBe('');
  }, 90_000);

  it('a server that dies mid-call gives the model an error result; once it is back the next turn calls it again', async () => {
    const { client, model } = stack;
    const conversation = key('dies');
    const gate = gateName('mcp-dies');
    const text = `call wait_at {"gate":"${gate}"}`;
    await client.chat(conversation, { text, id: 'w', agent: 'mcp' });
    await model.gate(gate).reached();
    await notes.kill();
    const turn = await answered(client, conversation, 'w');
    const [result] = toolMessages(requestAfter(text)!);
    expect(result.content).toBe('error: the tool wait_at of MCP server notes failed: MCP error -32000: Connection closed');
    expect(turn).toMatchObject({ status: 'completed', content: `calling wait_at\n\nafter ${result.content}: ${text}` });

    await notes.start();
    await vi.waitFor(async () => expect(await mcpUp('mcp', 'notes')).toBe(1), WAIT);
    await client.chat(conversation, { text: 'call note {"text":"again"}', id: 'n' });
    expect(await answered(client, conversation, 'n')).toMatchObject({ status: 'completed', content: 'calling note\n\nafter noted "again" as note 1: call note {"text":"again"}' });
  });

  it('a stdio server that dies mid-call gives the model an error result; the worker starts it again and the next turn calls it', async () => {
    const { client, http } = stack;
    const conversation = key('stdio-dies');
    const text = 'call trigger-long-running-operation {"duration":600,"steps":1}';
    const events = http.events(conversation, { 'last-event-id': '0' });
    await client.chat(conversation, { text, id: 'w', agent: 'mcp' });
    await readEvents(await events, (message) => message.event === 'tool.started');
    // The worker's own child: server-everything, which it started over stdio.
    const [everything] = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(worker.child.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes('server-everything'))
      .map((line) => Number(line.trim().split(/\s+/)[0]));
    expect(everything).toBeGreaterThan(0);
    process.kill(everything, 'SIGKILL');
    const turn = await answered(client, conversation, 'w');
    const [result] = toolMessages(requestAfter(text)!);
    expect(result.content).toMatch(/^error: the tool trigger-long-running-operation of MCP server everything failed: MCP error -32000: Connection closed$|^error: the MCP server everything is not connected/);
    expect(turn).toMatchObject({ status: 'completed', content: `calling trigger-long-running-operation\n\nafter ${result.content}: ${text}` });

    await vi.waitFor(async () => expect(await mcpUp('mcp', 'everything')).toBe(1), WAIT);
    await client.chat(conversation, { text: 'call echo {"message":"again"}', id: 'e' });
    expect(await answered(client, conversation, 'e')).toMatchObject({ status: 'completed', content: 'calling echo\n\nafter Echo: again: call echo {"message":"again"}' });
  });

  it('a worker stopped with SIGTERM ends its sessions with the HTTP server and exits 0', async () => {
    await vi.waitFor(async () => {
      expect(await mcpUp('mcp', 'notes')).toBe(1);
      expect(await mcpUp('impatient', 'notes')).toBe(1);
      expect(await mcpUp('careful', 'notes')).toBe(1);
    }, { ...WAIT, timeout: 45_000 });
    expect(await worker.kill('SIGTERM')).toBe(0);
    // One session per agent that lists the server: mcp, impatient, careful.
    expect(logged().filter((l) => l.pid === notes.pid() && l.event === 'session ended')).toHaveLength(3);
  }, 60_000);
});
