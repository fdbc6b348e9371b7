import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startCompanion } from '@rudder/companion';
import { createTestDatabase } from '@rudder/dev-services';
import { startGateway } from '@rudder/gateway';
import { createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { startScriptedModel, type ScriptedModel } from '@rudder/scripted-model';
import { testScript } from '../test/scripts';
import { createClient, type Client } from './client';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Where Kafka and PostgreSQL are: one of each for the whole run. */
export type Infra = { kafkaBrokers: string; databaseUrl: string };

export type WorkerProcess = {
  child: ChildProcess;
  /** Resolves, on performance.now(), once the worker owns partitions. */
  assigned: Promise<number>;
  kill(signal: NodeJS.Signals): Promise<void>;
};

export type BenchStack = {
  env: Record<string, string>;
  client: Client;
  model: ScriptedModel;
  startWorker(): Promise<WorkerProcess>;
  /** A worker process, not yet waited for. */
  spawnWorker(): WorkerProcess;
  stop(): Promise<void>;
};

/**
 * The system as test/stack.ts builds it, minus vitest: a fresh database and topic namespace
 * on the run's Kafka and PostgreSQL, the scripted model (test/scripts.ts) over HTTP, the
 * companion and the gateway in this process, turn workers as child processes.
 */
export async function startBenchStack(infra: Infra, options: { workers?: number; workerEnv?: Record<string, string> } = {}): Promise<BenchStack> {
  const database = await createTestDatabase(infra.databaseUrl);
  const model = await startScriptedModel({ script: testScript });
  const env: Record<string, string> = {
    KAFKA_BROKERS: infra.kafkaBrokers,
    DATABASE_URL: database.url,
    KAFKA_NAMESPACE: `b${randomBytes(4).toString('hex')}.`,
    KAFKA_PARTITIONS: '3',
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'bench',
    OPENAI_MODEL: 'scripted',
    WORKER_SESSION_TIMEOUT_MS: '6000',
    WORKER_HEARTBEAT_MS: '500',
    ...options.workerEnv,
  };
  const config = readConfig({ ...env, COMPANION_PORT: '0' });
  await ensureTopics(createKafka(env.KAFKA_BROKERS, 'bench'), topicNames(env.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);
  const companion = await startCompanion(config);
  const gateway = await startGateway(readConfig({ ...env, GATEWAY_PORT: '0', COMPANION_URL: `http://127.0.0.1:${companion.port}` }));

  const workers: WorkerProcess[] = [];
  const spawnOne = () => {
    const worker = spawnWorker(env);
    workers.push(worker);
    return worker;
  };
  const startWorker = async () => {
    const worker = spawnOne();
    await worker.assigned;
    return worker;
  };
  for (let i = 0; i < (options.workers ?? 1); i++) await startWorker();

  return {
    env,
    client: createClient(gateway.url),
    model,
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

/** A turn worker in its own process (as test/stack.ts spawns it), so it can be SIGKILLed for real. */
function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/turn-worker/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const assigned = new Promise<number>((resolve, reject) => {
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('partitions assigned')) resolve(performance.now());
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    void exited.then(() => reject(new Error(`worker exited before it was assigned partitions:\n${output}`)));
    setTimeout(() => reject(new Error(`worker not assigned partitions within 60 s:\n${output}`)), 60_000).unref();
  });
  assigned.catch(() => undefined);
  return {
    child,
    assigned,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
