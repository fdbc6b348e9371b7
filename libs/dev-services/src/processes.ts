import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';
import { readFile } from 'node:fs/promises';

/**
 * Keeping the local servers from outliving the process that started them.
 *
 * Three layers, because no single one covers every way a process ends:
 * - `stop()` of each service: the normal path, awaited, graceful.
 * - `onProcessExit`: synchronous last words on 'exit', and on SIGINT/SIGTERM when nobody else
 *   handles the signal (then we re-raise it, so the process still dies the default way).
 *   When the application has its own signal handler, it owns the shutdown order (it may want
 *   to disconnect its consumers before Kafka goes away) and must call `stop()`.
 * - `armWatchdog`: a detached `sh` that waits for EOF on a pipe from this process. The kernel
 *   closes that pipe however we die, SIGKILL included, and the watchdog then stops the
 *   server and removes its temp dir.
 */

type LastWords = () => void;
const lastWords = new Set<LastWords>();
let installed = false;

/** Registers a synchronous action for when this process ends; returns its unregistration. */
export function onProcessExit(action: LastWords): () => void {
  install();
  lastWords.add(action);
  return () => {
    lastWords.delete(action);
  };
}

function runLastWords(): void {
  for (const action of lastWords) {
    try {
      action();
    } catch {
      // Last words must not keep the others from running.
    }
  }
  lastWords.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runLastWords);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const handler = () => {
      if (process.listenerCount(signal) > 1) return; // the application handles it and calls stop()
      runLastWords();
      process.removeListener(signal, handler);
      process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}

/** Sends a signal, ignoring a process that is already gone. */
export function signalQuietly(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return error instanceof Error && 'code' in error && error.code === 'EPERM';
  }
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Stops a child we spawned: `signal`, then SIGKILL after `graceMs`; resolves once it exited.
 */
export async function terminate(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<void> {
  if (exited(child)) return;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exit;
  clearTimeout(timer);
}

// $1 pid (may be empty), $2 signal name, $3 directory to remove (may be empty). `read`
// returns on EOF: the only writer, this Node process, is gone.
const WATCHDOG = `read _line
if [ -n "$1" ]; then
  kill -s "$2" "$1" 2>/dev/null
  i=0
  while kill -0 "$1" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  kill -s KILL "$1" 2>/dev/null
fi
if [ -n "$3" ]; then rm -rf "$3"; fi
`;

export type Watchdog = { disarm(): void };

/**
 * Starts the watchdog of one server process and/or its temp dir (see the top of this file).
 * `disarm()` before stopping the server on purpose, or the watchdog would act once we exit.
 * Node opens its pipes close-on-exec, so the server itself never holds the pipe open.
 */
export function armWatchdog(pid: number | undefined, signal: NodeJS.Signals, dirToRemove?: string): Watchdog {
  const watchdog = spawn('sh', ['-c', WATCHDOG, 'rudder-watchdog', pid === undefined ? '' : String(pid), signal.replace(/^SIG/, ''), dirToRemove ?? ''], {
    detached: true, // its own session: a Ctrl-C in the terminal must not kill it first
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.on('error', () => undefined);
  watchdog.unref();
  if (watchdog.stdin instanceof Socket) watchdog.stdin.unref();
  watchdog.stdin?.on('error', () => undefined);
  return {
    disarm: () => {
      watchdog.kill('SIGKILL');
    },
  };
}


/** The last lines of some log files, for error messages; missing files are skipped. */
export async function tailOf(files: string[], lines = 40): Promise<string> {
  const parts: string[] = [];
  for (const file of files) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text.trim() === '') continue;
    parts.push(`--- ${file} (last ${lines} lines) ---\n${text.trimEnd().split('\n').slice(-lines).join('\n')}`);
  }
  return parts.length > 0 ? parts.join('\n') : '(no log output)';
}

/**
 * Awaits `stopping` (a library's own stop of a process we did not spawn), with SIGKILL to
 * `pid` after `graceMs`; also returns when the process is gone but `stopping` never settles
 * (it waits for an 'exit' that already happened).
 */
export async function stoppedOrKilled(stopping: Promise<void>, pid: number | undefined, graceMs = 5000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const fallback = new Promise<void>((resolve) => {
    timer = setTimeout(async () => {
      signalQuietly(pid, 'SIGKILL');
      while (pid !== undefined && isAlive(pid)) await sleep(50);
      resolve();
    }, graceMs);
  });
  try {
    await Promise.race([stopping, fallback]);
  } finally {
    clearTimeout(timer);
  }
}
