/**
 * `npm test [-- <vitest arguments>]`: the type check, the lint and every tier of vitest, side by
 * side. The type check and eslint are one thread each, and vitest's spec files spend much of
 * their time waiting on the services they start, so the checks run in cores the suite leaves
 * idle instead of before it. vitest's output streams as it comes; each check's output is printed
 * whole when it ends, so the checks never interleave with a line of vitest's. Exits 1 when any
 * of the three failed (after all three ended).
 */
import { spawn, type ChildProcess } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function ended(child: ChildProcess, name: string, started: number, output: Buffer[] | null): Promise<boolean> {
  return new Promise((resolve) => {
    child.on('error', (error) => (output ? output.push(Buffer.from(`${String(error)}\n`)) : process.stderr.write(`${name}: ${String(error)}\n`)));
    child.on('close', (code, signal) => {
      const ok = code === 0;
      if (output) process.stdout.write(Buffer.concat(output));
      process.stdout.write(`${name}: ${ok ? 'passed' : `failed (${signal ?? `exit ${code}`})`} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
      resolve(ok);
    });
  });
}

/** An npm script with its output kept until it ends. */
function check(script: string): Promise<boolean> {
  const child = spawn(npm, ['run', '-s', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: Buffer[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk));
  return ended(child, script, Date.now(), output);
}

const vitest = spawn(npm, ['exec', '--', 'vitest', 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
const results = await Promise.all([check('typecheck'), check('lint'), ended(vitest, 'vitest', Date.now(), null)]);
process.exitCode = results.every(Boolean) ? 0 : 1;
