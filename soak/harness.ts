import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startCompanion } from '@rudder/companion';
import { createTestDatabase } from '@rudder/dev-services';
import { startGateway } from '@rudder/gateway';
import { createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { startScriptedModel, type ScriptedModel } from '@rudder/scripted-model';
import { soakScript } from './traffic';
import type { Infra } from '../test/system';

export type { Infra };

/**
 * The system for one soak run, as test/stack.ts builds it but without vitest: a fresh
 * database and topic namespace on the given Kafka and PostgreSQL, the scripted model over
 * HTTP, companion and gateway in this process, turn workers as child processes.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUTPUT_TAIL = 200_000;


export type WorkerState = 'starting' | 'running' | 'paused' | 'stopping' | 'exited';

export type SoakWorker = {
  name: string;
  child: ChildProcess;
  state: WorkerState;
  /** True once it owns partitions; false if it exited or was not assigned within 60 s. */
  ready: Promise<boolean>;
  exited: Promise<void>;
  /** The last 200 kB of its stdout and stderr. */
  output(): string;
  /** Lines seen so far that contain `text`. */
  count(text: string): number;
  signal(signal: NodeJS.Signals): void;
};

export type SoakStack = {
  env: Record<string, string>;
  gatewayUrl: string;
  model: ScriptedModel;
  workers: SoakWorker[];
  /** Spawns a worker (with `extraEnv`: CRASH_AT, say) and waits (at most 60 s) until it owns partitions. */
  startWorker(extraEnv?: Record<string, string>): Promise<SoakWorker>;
  stop(): Promise<void>;
};

/** Worker log lines the report counts. */
export const WATCHED_LINES = ['fenced', 'a write was already stored', 'conversation failed', 'dead-lettered', 'partitions assigned', 'crashing at after-publish'] as const;

export async function startSoakStack(infra: Infra, options: { workers: number; sessionTimeoutMs: number; databases?: number }): Promise<SoakStack> {
  // Several primaries: a database each, on the infrastructure's servers in turn (as test/system.ts does).
  const servers = infra.databaseServers ?? [infra.databaseUrl];
  const databases = await Promise.all(Array.from({ length: options.databases ?? 1 }, (_, i) => createTestDatabase(servers[i % servers.length])));
  const model = await startScriptedModel({ script: soakScript });
  const env: Record<string, string> = {
    KAFKA_BROKERS: infra.kafkaBrokers,
    DATABASE_URL: databases[0].url,
    ...(databases.length > 1 ? { DATABASE_URLS: databases.map((database) => database.url).join(',') } : {}),
    KAFKA_NAMESPACE: `soak${randomBytes(4).toString('hex')}.`,
    KAFKA_PARTITIONS: '3',
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'soak',
    OPENAI_MODEL: 'scripted',
    WORKER_SESSION_TIMEOUT_MS: String(options.sessionTimeoutMs),
    WORKER_HEARTBEAT_MS: String(Math.max(200, Math.floor(options.sessionTimeoutMs / 8))),
    // One anonymous subject sends everything: no rate limit per subject.
    LIMIT_INPUTS_PER_SECOND: '0',
  };
  const stops: (() => Promise<unknown>)[] = [...databases.map((database) => () => database.drop()), () => model.stop()];
  const workers: SoakWorker[] = [];
  const stopAll = async () => {
    await Promise.all(workers.map(async (w) => (w.signal('SIGCONT'), w.signal('SIGKILL'), await w.exited)));
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  try {
    const config = readConfig({ ...env, COMPANION_PORT: '0' });
    await ensureTopics(createKafka(env.KAFKA_BROKERS, 'soak'), topicNames(env.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);
    const companion = await startCompanion(config);
    stops.push(() => companion.stop());
    const gateway = await startGateway(readConfig({ ...env, GATEWAY_PORT: '0', COMPANION_URL: `http://127.0.0.1:${companion.port}` }));
    stops.push(() => gateway.stop());

    let made = 0;
    const startWorker = async (extraEnv: Record<string, string> = {}) => {
      const worker = spawnWorker(`w${++made}`, { ...env, ...extraEnv });
      workers.push(worker);
      await worker.ready;
      return worker;
    };
    for (let i = 0; i < options.workers; i++) await startWorker();
    return { env, gatewayUrl: gateway.url, model, workers, startWorker, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

function spawnWorker(name: string, env: Record<string, string>): SoakWorker {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/turn-worker/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let partial = '';
  const counts = new Map<string, number>();
  let onReady: (ready: boolean) => void = () => undefined;
  const ready = new Promise<boolean>((resolve) => (onReady = resolve));
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-OUTPUT_TAIL);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) for (const watched of WATCHED_LINES) if (line.includes(watched)) counts.set(watched, (counts.get(watched) ?? 0) + 1);
    if ((counts.get('partitions assigned') ?? 0) > 0) {
      if (worker.state === 'starting') worker.state = 'running';
      onReady(true);
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      worker.state = 'exited';
      onReady(false);
      resolve();
    }),
  );
  const timer = setTimeout(() => onReady(false), 60_000);
  void ready.then(() => clearTimeout(timer));
  const worker: SoakWorker = {
    name,
    child,
    state: 'starting',
    ready,
    exited,
    output: () => output,
    count: (text) => counts.get(text) ?? 0,
    signal(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
  return worker;
}

