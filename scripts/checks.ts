/**
 * `npm run checks`: the type check and the lint side by side (`npm test` runs it before vitest).
 * Each alone leaves one of the two cores idle (the type check is one thread, and so is eslint);
 * together they take the longer one's time. Each one's output is printed whole when it ends, so
 * the two never interleave; exits 1 when either failed.
 */
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(script: string): Promise<boolean> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(npm, ['run', '-s', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const output: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.on('error', (error) => output.push(Buffer.from(`${String(error)}\n`)));
    child.on('close', (code, signal) => {
      const ok = code === 0;
      process.stdout.write(Buffer.concat(output));
      process.stdout.write(`${script}: ${ok ? 'passed' : `failed (${signal ?? `exit ${code}`})`} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
      resolve(ok);
    });
  });
}

const results = await Promise.all([run('typecheck'), run('lint')]);
process.exitCode = results.every(Boolean) ? 0 : 1;
