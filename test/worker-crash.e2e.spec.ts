import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolResults } from '@rudder/scripted-model';
import { eventually, startStack, type Stack } from './stack';
import { requestsAbout, testScript } from './scripts';
import { readEvents } from './sse';

/**
 * A worker killed at a chosen point — by itself through CRASH_AT, or from outside with
 * SIGKILL — and another started after it: every input is answered exactly once, a stored
 * reply is not asked for again and a stored tool result is not run again.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
});
afterAll(() => stack?.stop());

async function expectAnsweredOnce(conversation: string, input: string, text: string) {
  const { client, model } = stack;
  const turn = await client.answered(conversation, input, 60_000);
  expect(turn.status).toBe('completed');
  const ms = /wait (\d+)/.exec(text)![1];
  expect(turn.content).toBe(`waiting for ${text}\n\nafter waited ${ms} ms: ${text}`);
  const asked = requestsAbout(model.requests, text);
  // Two steps: the reply that calls the tool, and the one after its result; never again.
  const firstSteps = asked.filter((r) => toolResults(r).length === 0);
  const secondSteps = asked.filter((r) => toolResults(r).length > 0);
  expect(firstSteps.length).toBeGreaterThanOrEqual(1);
  expect(secondSteps.length).toBeGreaterThanOrEqual(1);
  for (const request of secondSteps) expect(toolResults(request)).toHaveLength(1);
  const transcript = await client.messages(conversation);
  expect(transcript.body.items.map((m) => `${m.role}: ${m.text}`)).toEqual([
    `user: ${text}`,
    `assistant: waiting for ${text}`,
    `assistant: after waited ${ms} ms: ${text}`,
  ]);
  const events = await readEvents(await client.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
  expect(events.filter((m) => m.event === 'turn.started')).toHaveLength(1);
  expect(events.filter((m) => m.event === 'tool.ended')).toHaveLength(1);
  return asked;
}

async function crashAt(point: string, conversation: string, text: string) {
  const doomed = await stack.startWorker({ CRASH_AT: point });
  await stack.client.chat(conversation, { text, id: `${point}-1` });
  await doomed.exited;
  expect(doomed.child.signalCode).toBe('SIGKILL');
  expect(doomed.output()).toContain(`crashing at ${point}`);
  const successor = await stack.startWorker();
  const asked = await expectAnsweredOnce(conversation, `${point}-1`, text);
  await successor.kill('SIGTERM');
  return asked;
}

describe('a worker killed mid-turn', () => {
  it('killed with SIGKILL while a tool runs: the next worker finishes the turn once, without asking again for the stored reply', async () => {
    const conversation = `crash/sigkill-${Date.now()}`;
    const worker = await stack.startWorker();
    await stack.client.chat(conversation, { text: 'wait 1500', id: 'kill-1' });
    await stack.client.started(conversation, 'kill-1');
    await eventually(async () => (requestsAbout(stack.model.requests, 'wait 1500').length === 1 ? true : undefined));
    await worker.kill('SIGKILL');
    const successor = await stack.startWorker();
    const asked = await expectAnsweredOnce(conversation, 'kill-1', 'wait 1500');
    expect(asked.filter((r) => toolResults(r).length === 0)).toHaveLength(1);
    await successor.kill('SIGTERM');
  });

  it('after the model reply is stored: the reply is not asked for again', async () => {
    const asked = await crashAt('after-reply-stored', `crash/reply-${Date.now()}`, 'wait 100');
    expect(asked).toHaveLength(2);
  });

  it('after a tool result is stored: the tool does not run again and the next request has its result once', async () => {
    const asked = await crashAt('after-tool-result-stored', `crash/tool-${Date.now()}`, 'wait 101');
    expect(asked).toHaveLength(2);
  });

  it('after publishing and before marking: the events are published again and every view holds them once', async () => {
    await crashAt('after-publish', `crash/publish-${Date.now()}`, 'wait 102');
  });

  it('after ingesting and before committing the offset: the redelivered input is answered once', async () => {
    const asked = await crashAt('after-ingest', `crash/ingest-${Date.now()}`, 'wait 103');
    expect(asked).toHaveLength(2);
  });
});
