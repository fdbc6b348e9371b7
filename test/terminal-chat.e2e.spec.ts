import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStreams } from './prometheus';
import { gateName, testScript } from './scripts';
import { WAIT, startStack, type Stack } from './stack';

/** `npm run chat` (scripts/chat.ts) on @rudder/client, driven through its standard input. */
let stack: Stack;
beforeAll(async () => {
  // The test worker app: the default agent's tools and `hold`, a tool held at a gate.
  stack = await startStack({ script: testScript, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the terminal chat', () => {
  it('sends a chat, streams the answer, steers the running turn, shows the queue, stops a running turn and says when none runs', async () => {
    const key = `terminal/${Date.now()}`;
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/chat.ts', key], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_URL: stack.gatewayUrl },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const shows = (text: string) => vi.waitFor(() => expect(output).toContain(text), { ...WAIT, timeout: 20_000 });
    try {
      await shows('Chatting on');
      // The chat follows the stream live (no position): it sees what is published once the gateway counts the stream.
      await vi.waitFor(async () => expect(await openStreams(stack.gatewayUrl)).toBe(1), WAIT);
      child.stdin.write('hello\n');
      await shows('answer to hello');
      // The `hold` tool runs until the gate opens: the steer lands in the running turn by construction.
      const tool = gateName('tool');
      child.stdin.write(`look it up tool-gate:${tool}\n`);
      await shows(`[hold {"gate":"${tool}"}]`);
      await stack.model.gate(tool).reached();
      child.stdin.write('/steer use Celsius\n');
      await shows('lands in turn');
      // What /queue prints comes from the companion: ask once it has folded the steer.
      await vi.waitFor(async () => expect((await stack.client.status(key)).steering).toHaveLength(1), WAIT);
      child.stdin.write('/queue\n');
      await vi.waitFor(() => expect(output).toMatch(/running: turn \S+ \(since [^)]+\)\nsteering:\n {2}\S+ {2}use Celsius\nqueue: empty\n/), WAIT);
      child.stdin.write('/retract nothing-like-it\n');
      await shows('(retract failed: 404 not_found');
      stack.model.gate(tool).open();
      await shows('[took steer');
      await shows('answer to use Celsius');
      // A turn held while the model writes: /stop stops it; then no turn runs.
      const reply = gateName('reply');
      child.stdin.write(`hold on gate:${reply}\n`);
      await stack.model.gate(reply).reached();
      child.stdin.write('/stop\n');
      await vi.waitFor(() => expect(output).toMatch(/\(stopping turn \S+\)/), WAIT);
      await shows('(turn stopped');
      child.stdin.write('/stop\n');
      await shows('(no turn was running)');
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });
});
