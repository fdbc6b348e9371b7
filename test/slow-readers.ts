import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { lastUserText, reply, type Script } from '@rudder/scripted-model';
import { testScript } from './scripts';
import { withTimeout } from './system';

/**
 * What the memory-caps test (`memory-caps.e2e.spec.ts`) and its measurement
 * (`bench/slow-readers.ts`) share: a gateway in a process of its own (so its memory is its own),
 * event streams that never read, and a model that streams long answers.
 */

/** A gateway process beside a stack's own (same Kafka, topics and companion). */
export type GatewayProcess = { url: string; pid: number; output(): string; stop(): Promise<void> };

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Starts `apps/gateway/src/main.ts` with `env` (a port the system chooses); resolves once it listens. */
export async function gatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'apps/gateway/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, LOG_FORMAT: 'json', ...env, GATEWAY_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await withTimeout(
    new Promise<string>((resolve, reject) => {
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
        const listening = /gateway listening on (http:\/\/[\d.:]+)/.exec(output);
        if (listening) resolve(listening[1]);
      };
      child.stdout!.on('data', collect);
      child.stderr!.on('data', collect);
      child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before it listened:\n${output}`)));
    }),
    60_000,
    () => `the gateway did not listen in time:\n${output}`,
  );
  return {
    url,
    pid: child.pid!,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * `count` event streams of `conversation` that never read: each sends its GET and pauses its
 * socket at once, so the kernel's buffers fill and the gateway holds the rest (or drops it).
 * `close` destroys them.
 */
export async function nonReadingStreams(gatewayUrl: string, conversation: string, count: number): Promise<{ sockets: Socket[]; close(): void }> {
  const { hostname, port } = new URL(gatewayUrl);
  const path = `/v1/conversations/${encodeURIComponent(conversation)}/events`;
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => {
            socket.write(`GET ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\naccept: text/event-stream\r\n\r\n`);
            socket.pause();
            resolve(socket);
          });
          socket.once('error', reject);
        }),
    ),
  );
  for (const socket of sockets) socket.on('error', () => undefined);
  return { sockets, close: () => sockets.forEach((socket) => socket.destroy()) };
}

/** A process's resident memory now and its peak since `resetPeak` (Linux: /proc/<pid>/status), bytes. */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Sets a process's peak resident memory (VmHWM) to what it holds now (`echo 5 > /proc/<pid>/clear_refs`). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/**
 * The tests' model, plus `stream <kB> kB`: an answer of that many kilobytes in words of 4,000
 * characters, streamed a word every 2 ms (the worker sends its tokens in records of what 40 ms
 * brought: ~80 kB each, well under Kafka's 1 MB per record; so is the stored answer, at up to ~900 kB).
 */
export const streamingScript: Script = (request) => {
  const asked = /^stream (\d+) kB/.exec(lastUserText(request));
  if (!asked) return testScript(request);
  return reply.text(longAnswer(Number(asked[1])), { tokenDelayMs: 2 });
};

/** The text `stream <kB> kB` is answered with. */
export const longAnswer = (kB: number): string =>
  Array.from({ length: Math.ceil((kB * 1000) / 4000) }, (_, i) => `${String(i).padStart(6, '0')}${'x'.repeat(3993)}`).join(' ');
