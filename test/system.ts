import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startCompanion, type Companion } from '@rudder/companion';
import { createTestDatabase } from '@rudder/dev-services';
import { startGateway } from '@rudder/gateway';
import { createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { startScriptedModel, type Script, type ScriptedModel } from '@rudder/scripted-model';
import { createClient, type Client } from './client';

/** A turn worker in its own process, so tests can SIGKILL and SIGSTOP it for real. */
export type WorkerProcess = {
  child: ChildProcess;
  output(): string;
  /** Resolves, with performance.now(), once the worker owns partitions. */
  ready: Promise<number>;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
};

/** Where Kafka and PostgreSQL are: one of each for a whole test run, benchmark or soak. */
export type Infra = { kafkaBrokers: string; databaseUrl: string };

export type Stack = {
  env: Record<string, string>;
  model: ScriptedModel;
  client: Client;
  gatewayUrl: string;
  companion: Companion;
  workers: WorkerProcess[];
  startWorker(extraEnv?: Record<string, string>): Promise<WorkerProcess>;
  /** A worker process, not waited for. */
  spawnWorker(extraEnv?: Record<string, string>): WorkerProcess;
  stop(): Promise<void>;
};

export type StackOptions = { script?: Script; workers?: number; workerEnv?: Record<string, string> };

/**
 * The whole system on a Kafka and a PostgreSQL: a fresh database and topic namespace, the
 * scripted model over HTTP, companion and gateway in this process, and turn workers as child
 * processes (so tests can SIGKILL and SIGSTOP them for real). Used by the tests (test/stack.ts),
 * the benchmarks and the soak.
 */
export async function startSystem(infra: Infra, options: StackOptions = {}): Promise<Stack> {
  const database = await createTestDatabase(infra.databaseUrl);
  const model = await startScriptedModel({ script: options.script });
  const env: Record<string, string> = {
    KAFKA_BROKERS: infra.kafkaBrokers,
    DATABASE_URL: database.url,
    KAFKA_NAMESPACE: `t${randomBytes(4).toString('hex')}.`,
    KAFKA_PARTITIONS: '3',
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'test',
    OPENAI_MODEL: 'scripted',
    WORKER_SESSION_TIMEOUT_MS: '6000',
    WORKER_HEARTBEAT_MS: '500',
    ...options.workerEnv,
  };
  const config = readConfig({ ...env, COMPANION_PORT: '0' });
  await ensureTopics(createKafka(env.KAFKA_BROKERS, 'test'), topicNames(env.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);
  const companion = await startCompanion(config);
  const gateway = await startGateway(readConfig({ ...env, GATEWAY_PORT: '0', COMPANION_URL: `http://127.0.0.1:${companion.port}` }));

  const workers: WorkerProcess[] = [];
  const spawnOne = (extraEnv: Record<string, string> = {}) => {
    const worker = spawnWorker({ ...env, ...extraEnv });
    workers.push(worker);
    return worker;
  };
  const startWorker = async (extraEnv: Record<string, string> = {}) => {
    const worker = spawnOne(extraEnv);
    await worker.ready;
    return worker;
  };
  for (let i = 0; i < (options.workers ?? 1); i++) await startWorker();

  return {
    env,
    model,
    client: createClient(gateway.url),
    gatewayUrl: gateway.url,
    companion,
    workers,
    startWorker,
    spawnWorker: spawnOne,
    async stop() {
      await Promise.all(workers.map((w) => w.kill('SIGKILL')));
      await gateway.stop();
      await companion.stop();
      await model.stop();
      await database.drop().catch(() => undefined);
    },
  };
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/turn-worker/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let onAssigned: (at: number) => void;
  let onFailed: (error: Error) => void;
  const ready = new Promise<number>((resolve, reject) => {
    onAssigned = resolve;
    onFailed = reject;
  });
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes('partitions assigned')) onAssigned(performance.now());
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      onFailed(new Error(`worker exited (${code}) before it was assigned partitions:\n${output}`));
      resolve(code);
    }),
  );
  return {
    child,
    output: () => output,
    ready: withTimeout(ready, 60_000, () => `worker not assigned partitions in time:\n${output}`),
    exited,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export function withTimeout<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message())), ms);
    }),
  ]);
}

/** Polls until `check` returns a value that is not undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, options: { timeoutMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${options.what ?? 'a condition'}${last ? `: ${String(last)}` : ''}`);
}
