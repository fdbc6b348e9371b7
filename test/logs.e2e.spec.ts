import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testScript } from './scripts';
import { WAIT, startStack, type Stack, type WorkerProcess } from './stack';

/** Structured logs: every service's lines are JSON through one logger (libs/runtime/src/log.ts). */
let stack: Stack;
let worker: WorkerProcess;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
  worker = await stack.startWorker();
});
afterAll(() => stack?.stop());

const jsonLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('logs', () => {
  it("the worker writes JSON lines, a turn's with its conversation, turn and input, and kafkajs' start-up noise is not among its warnings and errors", async () => {
    const { client } = stack;
    const key = `logs/turn-${Date.now()}`;
    await client.chat(key, { text: 'hello', id: 'log-chat' });
    const started = await vi.waitFor(() => {
      const line = jsonLines(worker.output()).find((l) => l.msg === 'turn started' && l.conversation === key);
      expect(line).toBeDefined();
      return line!;
    }, WAIT);
    expect(started).toEqual({
      level: 'info',
      time: expect.any(String),
      service: 'turn-worker',
      pid: expect.any(Number),
      conversation: key,
      turn: expect.any(String),
      input: 'log-chat',
      msg: 'turn started',
    });
    await vi.waitFor(() => expect(jsonLines(worker.output()).find((l) => l.msg === 'turn ended' && l.turn === started.turn)).toMatchObject({ conversation: key, status: 'completed' }), WAIT);
    // Every line the worker wrote is JSON; none of its warnings or errors is kafkajs retrying at start-up.
    const lines = worker.output().split('\n').filter(Boolean);
    expect(lines.filter((line) => !line.startsWith('{'))).toEqual([]);
    const loud = jsonLines(worker.output()).filter((l) => l.level === 'warn' || l.level === 'error');
    expect(loud.map((l) => l.msg)).not.toContainEqual(expect.stringMatching(/Limiting retries|coordinator/));
  });
});
