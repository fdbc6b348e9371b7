import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { testScript } from './scripts';
import { eventually, startStack, type Stack } from './stack';

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
    const shows = (text: string) => eventually(async () => (output.includes(text) ? true : undefined), { what: `"${text}" in:\n${output}`, timeoutMs: 20_000 });
    try {
      await shows('Chatting on');
      // The stream is live from when it opens: give it a moment before the first chat.
      await new Promise((resolve) => setTimeout(resolve, 500));
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
      await eventually(async () => (/\((no turn was running|stopping turn \S+)\)/.test(output) ? true : undefined), { what: 'the answer to /stop' });
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });
});
