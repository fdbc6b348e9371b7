import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { toolResults } from '@rudder/scripted-model';
import { answered, WAIT, startStack, type Stack } from './stack';
import { topicNames } from '@rudder/runtime';
import { gateName, requestsAbout, testScript } from './scripts';
import { readTopic } from './topic-reader';
import { readEvents } from './sse';

/**
 * A worker killed at a chosen point — by itself through CRASH_AT, or from outside with
 * SIGKILL — and another started after it: every input is answered exactly once, a stored
 * reply is not asked for again, and a stored tool result is not run again (the test worker
 * app's `record` tool logs every run) and is in the next request once.
 */
/** Where the test worker app's `record` tool writes a line per run. */
const toolLog = join(mkdtempSync(join(tmpdir(), 'rudder-tools-')), 'runs.jsonl');
const toolRuns = (conversation: string): { conversation: string; callId: string; pid: number }[] =>
  (existsSync(toolLog) ? readFileSync(toolLog, 'utf8') : '')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((run) => run.conversation === conversation);

let stack: Stack;
beforeAll(async () => {
  // The test worker app: the default agent's tools and `hold`, a tool held at a gate.
  stack = await startStack({ script: testScript, workers: 0, workerEntry: 'test/agents/worker.ts', workerEnv: { TOOL_LOG: toolLog } });
});
afterAll(() => stack?.stop());
// Each test starts the workers it needs: one that failed midway leaves none behind for the next.
afterEach(() => stack.stopWorkers());

/** Events of the conversation still in the outbox (not marked published). */
async function unpublished(conversation: string): Promise<number> {
  const client = new pg.Client({ connectionString: stack.databaseOf(conversation) });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM event_store.outbox WHERE conversation = $1', [conversation]);
    return rows[0].n;
  } finally {
    await client.end();
  }
}

/**
 * The turn answering `input` is completed once, with exactly `requests` model requests about
 * `text`: `first` asked for the reply that calls the tool, the others after its one result.
 */
/**
 * `afterTool`: how many requests carry the tool's result — a number, or the counts allowed: a
 * worker killed right after the result's commit may have sent the next request ahead of that
 * commit already (loop.ts, `Speculation`), and its successor sends it again; either way the
 * reply is stored once.
 */
async function expectAnsweredOnce(conversation: string, input: string, text: string, requests: { first: number; afterTool: number | readonly number[] }) {
  const { client, http, model } = stack;
  const turn = await answered(client, conversation, input, 60_000);
  expect(turn.status).toBe('completed');
  const ms = /wait (\d+)/.exec(text)![1];
  expect(turn.content).toBe(`waiting for ${text}\n\nafter waited ${ms} ms: ${text}`);
  const asked = requestsAbout(model.requests, text);
  const firstSteps = asked.filter((r) => toolResults(r).length === 0);
  const secondSteps = asked.filter((r) => toolResults(r).length > 0);
  expect(firstSteps.length).toBe(requests.first);
  expect(typeof requests.afterTool === 'number' ? [requests.afterTool] : requests.afterTool).toContain(secondSteps.length);
  for (const request of secondSteps) expect(toolResults(request).map((r) => r.content)).toEqual([`waited ${ms} ms`]);
  const transcript = await client.messages(conversation);
  expect(transcript.items.map((m) => `${m.role}: ${m.text}`)).toEqual([
    `user: ${text}`,
    `assistant: waiting for ${text}`,
    `assistant: after waited ${ms} ms: ${text}`,
  ]);
  const events = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
  expect(events.filter((m) => m.event === 'turn.started')).toHaveLength(1);
  expect(events.filter((m) => m.event === 'tool.ended')).toHaveLength(1);
  return asked;
}

async function crashAt(point: string, conversation: string, text: string) {
  const doomed = await stack.startWorker({ CRASH_AT: point });
  // Not awaited first: at `after-ingest` the worker dies before publishing the chat's decision,
  // so the 202 comes from the successor, which publishes what its predecessor committed.
  const accepted = stack.http.post(conversation, '/chat', { text, id: `${point}-1` });
  await doomed.exited;
  expect(doomed.child.signalCode).toBe('SIGKILL');
  expect(doomed.output()).toContain(`crashing at ${point}`);
  const successor = await stack.startWorker();
  expect((await accepted).status).toBe(202);
  // Killed right after a tool result's commit, the worker may have sent the next request ahead of it: the successor asks again.
  const asked = await expectAnsweredOnce(conversation, `${point}-1`, text, { first: 1, afterTool: point === 'after-tool-result-stored' ? [1, 2] : 1 });
  await successor.kill('SIGTERM');
  return asked;
}

describe('a worker killed mid-turn', () => {
  it('killed with SIGKILL while a tool runs: the next worker runs that call again and finishes the turn once, without asking again for the stored reply', async () => {
    const { client, http, model } = stack;
    const conversation = `crash/sigkill-${Date.now()}`;
    const gate = gateName('kill');
    const text = `look it up tool-gate:${gate}`;
    const worker = await stack.startWorker();
    await client.chat(conversation, { text, id: 'kill-1' });
    // The `hold` tool runs (and would until the gate opens) when the kill lands.
    await model.gate(gate).reached();
    await worker.kill('SIGKILL');
    const successor = await stack.startWorker();
    // Its result was never stored: the next worker runs the call again.
    await model.gate(gate).reached(2);
    model.gate(gate).open();
    const turn = await answered(client, conversation, 'kill-1', 60_000);
    expect(turn).toMatchObject({ status: 'completed', content: `waiting for ${text}\n\nafter held at ${gate}: ${text}` });
    const asked = requestsAbout(model.requests, text);
    expect({ first: asked.filter((r) => toolResults(r).length === 0).length, afterTool: asked.filter((r) => toolResults(r).length > 0).length }).toEqual({ first: 1, afterTool: 1 });
    expect((await client.messages(conversation)).items.map((m) => `${m.role}: ${m.text}`)).toEqual([
      `user: ${text}`,
      `assistant: waiting for ${text}`,
      `assistant: after held at ${gate}: ${text}`,
    ]);
    const events = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    expect(events.filter((m) => m.event === 'turn.started')).toHaveLength(1);
    expect(events.filter((m) => m.event === 'tool.ended')).toHaveLength(1);
    await successor.kill('SIGTERM');
  });

  it('after the model reply is stored: the reply is not asked for again', async () => {
    await crashAt('after-reply-stored', `crash/reply-${Date.now()}`, 'wait 100');
  });

  it('after a tool result is stored: the result is in place once in each next request (the dead worker may have sent one ahead), and the reply is stored once', async () => {
    await crashAt('after-tool-result-stored', `crash/tool-${Date.now()}`, 'wait 101');
  });

  it('after a tool result is stored: the tool is not run again (its runs are logged), and each next request has its result once', async () => {
    const { client, model } = stack;
    const conversation = `crash/tool-run-${Date.now()}`;
    const doomed = await stack.startWorker({ CRASH_AT: 'after-tool-result-stored' });
    await client.chat(conversation, { text: 'record 5', id: 'run-1' });
    await doomed.exited;
    expect(doomed.output()).toContain('crashing at after-tool-result-stored');
    const successor = await stack.startWorker();
    const turn = await answered(client, conversation, 'run-1', 60_000);
    const runs = toolRuns(conversation);
    expect(runs).toHaveLength(1);
    expect(runs[0].pid).toBe(doomed.child.pid);
    expect(turn).toMatchObject({ status: 'completed', content: `waiting for record 5\n\nafter recorded ${runs[0].callId}: record 5` });
    const afterTool = requestsAbout(model.requests, 'record 5').filter((r) => toolResults(r).length > 0);
    // The successor's, and perhaps one the killed worker sent ahead of the result's commit.
    expect([1, 2]).toContain(afterTool.length);
    for (const request of afterTool) expect(toolResults(request).map((t) => t.content)).toEqual([`recorded ${runs[0].callId}`]);
    await successor.kill('SIGTERM');
  });

  it('after publishing a turn\'s events and before marking them: the events are published again and every view holds them once', async () => {
    const { client, http, model } = stack;
    const conversation = `crash/publish-${Date.now()}`;
    const gate = gateName('publish');
    const text = `wait 102 gate-after-tool:${gate}`;
    // A first worker runs the turn up to its last request and leaves cleanly: all it stored is published and marked.
    const first = await stack.startWorker();
    await client.chat(conversation, { text, id: 'publish-1' });
    await model.gate(gate).reached();
    await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'tool.ended');
    await vi.waitFor(async () => expect(await unpublished(conversation), 'the outbox of the first worker marked').toBe(0), WAIT);
    await first.kill('SIGTERM');
    expect(await unpublished(conversation)).toBe(0);
    // The next one's first publication is the turn's last step: it dies right after publishing it.
    const doomed = await stack.startWorker({ CRASH_AT: 'after-publish' });
    await model.gate(gate).reached(2);
    model.gate(gate).open();
    await doomed.exited;
    expect(doomed.child.signalCode).toBe('SIGKILL');
    expect(doomed.output()).toContain('crashing at after-publish');
    const successor = await stack.startWorker();
    // On agent.events the last step is there twice (the relay publishes at least once: other
    // records may be there twice too), every copy the same record; deduplicated by id, the turn once.
    const records = await readTopic(stack.env.KAFKA_BROKERS, topicNames(stack.env.KAFKA_NAMESPACE).events, conversation, (all) =>
      all.filter((r) => JSON.parse(r.value).type === 'turn.ended').length >= 2,
    );
    const parsed = records.map((r) => ({ value: r.value, ...(JSON.parse(r.value) as { id: string; type: string; data: { step?: number } }) }));
    const copies = new Map<string, string[]>();
    for (const record of parsed) copies.set(record.id, [...(copies.get(record.id) ?? []), record.value]);
    for (const values of copies.values()) expect(new Set(values).size, 'every copy of an event is the same record').toBe(1);
    const lastStep = parsed.filter((r) => r.type === 'turn.ended' || (r.type === 'model.replied' && r.data.step === 1));
    expect(lastStep.filter((r) => r.type === 'model.replied').length, 'the last reply published again').toBeGreaterThanOrEqual(2);
    expect(lastStep.filter((r) => r.type === 'turn.ended').length, 'the turn\'s end published again').toBeGreaterThanOrEqual(2);
    expect(new Set(lastStep.map((r) => r.id)).size).toBe(2);
    const once = parsed.filter((r, i) => parsed.findIndex((o) => o.id === r.id) === i);
    expect(once.map((r) => r.type)).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered', 'model.replied', 'tool.started', 'tool.ended', 'model.replied', 'turn.ended']);
    // The held request died with the first worker: the last step was asked for twice, the first once.
    await expectAnsweredOnce(conversation, 'publish-1', text, { first: 1, afterTool: 2 });
    await successor.kill('SIGTERM');
  });

  it('after ingesting and before committing the offset: the redelivered input is answered once', async () => {
    await crashAt('after-ingest', `crash/ingest-${Date.now()}`, 'wait 103');
  });
});
