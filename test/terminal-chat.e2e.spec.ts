import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testScript } from './scripts';
import { WAIT, startStack, type Stack } from './stack';

/** `npm run chat` (scripts/chat.ts) on @rudder/client, driven through its standard input. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the terminal chat', () => {
  it('sends a chat, streams the answer, steers the running turn, shows the queue and stops', async () => {
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
      // The stream is live from when it opens: give it a moment before the first chat.
      await sleep(500);
      child.stdin.write('hello\n');
      await shows('answer to hello');
      child.stdin.write('wait 1500\n');
      await shows('[wait');
      child.stdin.write('/steer use Celsius\n');
      await shows('lands in turn');
      await shows('[took steer');
      await shows('use Celsius');
      child.stdin.write('/queue\n');
      await shows('running:');
      child.stdin.write('/retract nothing-like-it\n');
      await shows('(retract failed: 404 not_found');
      child.stdin.write('/stop\n');
      // the steered turn may have ended by now, or be writing its second answer
      await vi.waitFor(() => expect(output).toMatch(/\((no turn was running|stopping turn \S+)\)/), WAIT);
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });
});
