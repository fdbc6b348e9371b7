import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastMessage, lastUserText, reply, toolResults, type Script } from '@rudder/scripted-model';
import { answered, WAIT, startStack, type Stack } from './stack';
import { gateName, requestsAbout, requestsWith, testScript } from './scripts';

/**
 * Agents as a team registers them (test/agents/worker.ts: `default`; `quiet`, whose turns
 * take no steers; `brief`, whose model requests carry one earlier turn), in worker processes
 * of their own.
 */
const toolLog = join(mkdtempSync(join(tmpdir(), 'rudder-tools-')), 'calls.jsonl');
const failures = new Map<string, number>();
const script: Script = (request) => {
  const text = lastUserText(request);
  const record = /^record (\d+)/.exec(text);
  if (record && lastMessage(request)?.role !== 'tool') return reply.tools([{ name: 'record', arguments: { ms: Number(record[1]) } }]);
  const busy = /^busy twice (\S+)/.exec(text);
  if (busy && lastMessage(request)?.role !== 'tool') {
    const seen = failures.get(busy[1]) ?? 0;
    failures.set(busy[1], seen + 1);
    if (seen < 2) return reply.error(429, 'rate limited, on purpose');
  }
  if (text === 'same ids' && lastMessage(request)?.role !== 'tool') {
    return reply.tools([
      { id: 'same', name: 'wait', arguments: { ms: 1 } },
      { id: 'same', name: 'wait', arguments: { ms: 2 } },
    ]);
  }
  if (lastMessage(request)?.role === 'tool') return reply.text(`after ${toolResults(request).map((r) => r.content).join(', ')}: ${text}`);
  return testScript(request);
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script, workerEntry: 'test/agents/worker.ts', workerEnv: { TOOL_LOG: toolLog } });
});
afterAll(() => stack?.stop());

const key = (name: string) => `agents/${name}-${Math.random().toString(36).slice(2, 8)}`;
const toolRuns = () =>
  existsSync(toolLog)
    ? readFileSync(toolLog, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { conversation: string; turn: string; callId: string; subject: string; pid: number })
    : [];

describe('agents of a deployment', () => {
  it('a conversation keeps the agent its first chat named; another conversation gets the default; naming another is 409', async () => {
    const { client, http } = stack;
    const quiet = key('quiet');
    const plain = key('plain');
    expect((await http.post(quiet, '/chat', { text: 'hello', id: 'q1', agent: 'quiet' })).status).toBe(202);
    expect((await http.post(plain, '/chat', { text: 'hello', id: 'p1' })).status).toBe(202);
    expect(await answered(client, quiet, 'q1')).toMatchObject({ agent: 'quiet', status: 'completed' });
    expect(await answered(client, plain, 'p1')).toMatchObject({ agent: 'default', status: 'completed' });

    expect((await http.post(quiet, '/chat', { text: 'again', id: 'q2' })).status).toBe(202);
    expect(await answered(client, quiet, 'q2')).toMatchObject({ agent: 'quiet' });
    expect((await client.status(quiet)).agent).toBe('quiet');

    const other = await http.post(quiet, '/chat', { text: 'switch', id: 'q3', agent: 'default' });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'agent_mismatch' } });
    expect(await client.status(quiet)).toMatchObject({ agent: 'quiet', queue: [], lastInputId: 'q2' });
  });

  it("an agent whose turns take no steers answers a steer as a turn of its own, after the running turn", async () => {
    const { client, model } = stack;
    const conversation = key('no-steers');
    // The `hold` tool runs until the gate opens: the steer comes while the turn has a step ahead, by construction.
    const gate = gateName('quiet');
    const text = `look it up tool-gate:${gate}`;
    await client.chat(conversation, { text, id: 'w', agent: 'quiet' });
    await model.gate(gate).reached();
    const steer = await client.steer(conversation, { text: 'not now', id: 's' });
    expect(steer).toEqual({ id: 's', turn: null, landed: false });
    model.gate(gate).open();
    const running = await answered(client, conversation, 'w');
    expect(running).toMatchObject({ steered: [], content: `waiting for ${text}\n\nafter held at ${gate}: ${text}` });
    const own = await answered(client, conversation, 's');
    expect(own).toMatchObject({ agent: 'quiet', prompt: { id: 's', text: 'not now' } });
    expect(Date.parse(own.startedAt)).toBeGreaterThanOrEqual(Date.parse(running.endedAt!));
  });

  it("a model request carries the agent's last history.turns earlier turns, each whole; the default agent's carry them all (HISTORY_TURNS 100)", async () => {
    const { client } = stack;
    for (const agent of ['brief', 'default']) {
      const conversation = key(`history-${agent}`);
      // The first turn calls a tool: what later turns see of it is its prompt and its answer.
      const chats = ['record 1', `second to ${agent}`, `third to ${agent}`];
      const answers: string[] = [];
      for (const [i, text] of chats.entries()) {
        await client.chat(conversation, { text, id: `h${i}`, ...(i === 0 ? { agent } : {}) });
        answers.push((await answered(client, conversation, `h${i}`)).content);
      }
      const [third] = requestsAbout(stack.model.requests, chats[2]);
      const earlier = [0, 1].flatMap((i) => [{ role: 'user', content: chats[i] }, { role: 'assistant', content: answers[i] }]);
      expect(third.body.messages.slice(1), agent).toEqual([...(agent === 'brief' ? earlier.slice(2) : earlier), { role: 'user', content: chats[2] }]);
    }
  });

  it('an unknown agent is 400 unknown_agent, and nothing waits or runs in the conversation', async () => {
    const { http } = stack;
    const conversation = key('unknown');
    const answer = await http.post(conversation, '/chat', { text: 'hello', id: 'u1', agent: 'nobody' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'unknown_agent', message: expect.stringContaining('nobody') } });
    // Nothing entered: the key is still one nobody has written to (no status to read).
    expect((await http.get(conversation)).status).toBe(404);
    expect((await http.get(conversation, '/turns?input=u1')).status).toBe(404);
    expect(requestsWith(stack.model.requests, 'hello').filter((r) => JSON.stringify(r.body).includes('u1'))).toEqual([]);
  });

  it('a tool gets the conversation, the turn, the subject and a call id; killed mid-run, its rerun has the same call id', async () => {
    const conversation = key('rerun');
    const doomed = await stack.startWorker({ CRASH_AT: 'before-tool-result-stored' });
    await Promise.all(stack.workers.filter((w) => w !== doomed).map((w) => w.kill('SIGTERM')));
    await stack.client.chat(conversation, { text: 'record 10', id: 'r1' });
    await doomed.exited;
    await stack.startWorker();
    const turn = await answered(stack.client, conversation, 'r1');
    const runs = toolRuns().filter((r) => r.conversation === conversation);
    expect(runs).toHaveLength(2);
    expect(runs[0].pid).not.toBe(runs[1].pid);
    expect(new Set(runs.map((r) => r.callId)).size).toBe(1);
    expect(runs[0]).toMatchObject({ turn: turn.id, subject: 'anonymous' });
    expect(turn.content).toBe(`after recorded ${runs[0].callId}: record 10`);
  });

  it('a model answering 429 twice, then succeeding, stores one reply; its usage is on the turn', async () => {
    const conversation = key('busy');
    await stack.client.chat(conversation, { text: 'busy twice b1', id: 'b1' });
    const turn = await answered(stack.client, conversation, 'b1');
    expect(turn).toMatchObject({ status: 'completed', content: 'answer to busy twice b1' });
    expect(stack.model.requests.filter((r) => lastUserText(r) === 'busy twice b1')).toHaveLength(3);
    const replies = (await stack.client.messages(conversation)).items.filter((m) => m.role === 'assistant');
    expect(replies.map((m) => m.text)).toEqual(['answer to busy twice b1']);
    expect(turn.usage).toMatchObject({ promptTokens: expect.any(Number), completionTokens: expect.any(Number) });
    expect(turn.usage!.totalTokens).toBe(turn.usage!.promptTokens + turn.usage!.completionTokens);
  });

  it('a reply whose tool calls repeat an id runs each call once under an id of its own, and the turn answers', async () => {
    const conversation = key('same-ids');
    await stack.client.chat(conversation, { text: 'same ids', id: 'd1' });
    const turn = await answered(stack.client, conversation, 'd1');
    expect(turn.status).toBe('completed');
    const second = await vi.waitFor(() => {
      const requests = stack.model.requests.filter((r) => lastUserText(r) === 'same ids');
      expect(requests.length).toBeGreaterThanOrEqual(2);
      return requests[1];
    }, WAIT);
    const ids = second.body.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(toolResults(second).map((r) => r.tool_call_id).sort()).toEqual([...ids].sort());
  });
});
