import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startCompanion } from '@rudder/companion';
import { createTestDatabase } from '@rudder/dev-services';
import { startGateway } from '@rudder/gateway';
import { configuredShards, createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { startScriptedModel, type Script, type ScriptedModel } from '@rudder/scripted-model';
import { RudderClient } from '@rudder/client';
import { nodeArgs, type Bundles } from './bundles';
import { createHttp, type Http } from './http';

/** A turn worker in its own process, so tests can SIGKILL and SIGSTOP it for real. */
export type WorkerProcess = {
  child: ChildProcess;
  output(): string;
  /** Resolves, with performance.now(), once the worker owns partitions. */
  ready: Promise<number>;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
};

/**
 * Where Kafka and PostgreSQL are: one of each for a whole test run, benchmark or soak; and
 * the run's bundles of the programs it starts as processes, when it made them (test/bundles.ts).
 */
export type Infra = {
  kafkaBrokers: string;
  databaseUrl: string;
  /** PostgreSQL servers for a stack of several primaries (`StackOptions.databases`): database i on server i modulo their count. Default: `databaseUrl`'s alone. */
  databaseServers?: string[];
  bundles?: Bundles;
};

export type Stack = {
  env: Record<string, string>;
  model: ScriptedModel;
  /** `@rudder/client` on the gateway, as a team calls it. */
  client: RudderClient;
  /** The same API as it answers, status and headers and all (http.ts): for asserting the SPEC's exact answers. */
  http: Http;
  gatewayUrl: string;
  /** The stack's PostgreSQL primaries (its databases, one per primary: `StackOptions.databases`), shard 0 first. */
  databaseUrls: string[];
  /** The URL of the primary that holds `conversation` (the shard of its key's partition). */
  databaseOf(conversation: string): string;
  /** Where the companion's internal HTTP API answers (in this process or in its own). */
  companionUrl: string;
  /** Set when the stack was started with `companion: 'process'`: the test may SIGKILL and restart it. */
  companionProcess?: CompanionProcess;
  workers: WorkerProcess[];
  startWorker(extraEnv?: Record<string, string>): Promise<WorkerProcess>;
  /** A worker process, not waited for. */
  spawnWorker(extraEnv?: Record<string, string>): WorkerProcess;
  /**
   * Stops every worker as an operator does (SIGCONT, for one paused, then SIGTERM; SIGKILL after
   * 10 s) and forgets them: a worker stopped so leaves its group at once, so the next one a test
   * starts is assigned partitions without waiting out the session of one killed.
   */
  stopWorkers(): Promise<void>;
  stop(): Promise<void>;
};

export type StackOptions = {
  script?: Script;
  workers?: number;
  workerEnv?: Record<string, string>;
  /** `process`: the companion runs as a child process on a fixed port (the gateway keeps its URL). */
  companion?: 'in-process' | 'process';
  /** The worker's main, from the repository root: a team's own worker app (default: the default agent's). */
  workerEntry?: string;
  /**
   * How many PostgreSQL primaries (default 1: DATABASE_URL): a fresh database each on the run's
   * one server (or on `Infra.databaseServers` in turn), named in DATABASE_URLS. Databases of one server are separate for the code as
   * primaries are: no transaction, statement or lock spans two.
   */
  databases?: number;
};

/**
 * The whole system on a Kafka and a PostgreSQL: a fresh database and topic namespace, the
 * scripted model over HTTP, companion and gateway in this process, and turn workers as child
 * processes (so tests can SIGKILL and SIGSTOP them for real). Used by the tests (test/stack.ts),
 * the benchmarks and the soak.
 */
export async function startSystem(infra: Infra, options: StackOptions = {}): Promise<Stack> {
  const servers = infra.databaseServers ?? [infra.databaseUrl];
  const databases = await Promise.all(Array.from({ length: options.databases ?? 1 }, (_, i) => createTestDatabase(servers[i % servers.length])));
  const databaseUrls = databases.map((database) => database.url);
  const model = await startScriptedModel({ script: options.script });
  const env: Record<string, string> = {
    KAFKA_BROKERS: infra.kafkaBrokers,
    DATABASE_URL: databaseUrls[0],
    ...(databaseUrls.length > 1 ? { DATABASE_URLS: databaseUrls.join(',') } : {}),
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
  const shards = configuredShards(config);
  await ensureTopics(createKafka(env.KAFKA_BROKERS, 'test'), topicNames(env.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);
  let stopCompanion: () => Promise<void>;
  let companionUrl: string;
  let ownCompanion: CompanionProcess | undefined;
  if (options.companion === 'process') {
    ownCompanion = companionProcess(env, await freePort(), infra.bundles);
    await ownCompanion.start();
    companionUrl = ownCompanion.url;
    stopCompanion = () => ownCompanion!.kill('SIGKILL');
  } else {
    const companion = await startCompanion(config);
    companionUrl = `http://127.0.0.1:${companion.port}`;
    stopCompanion = () => companion.stop();
  }
  const gateway = await startGateway(readConfig({ ...env, GATEWAY_PORT: '0', COMPANION_URL: companionUrl }));

  const workers: WorkerProcess[] = [];
  const spawnOne = (extraEnv: Record<string, string> = {}) => {
    const worker = spawnWorker({ ...env, ...extraEnv }, options.workerEntry, infra.bundles);
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
    ...callerOf(gateway.url),
    gatewayUrl: gateway.url,
    databaseUrls,
    databaseOf: (conversation) => shards.urls[shards.shardOfKey(conversation)],
    companionUrl,
    companionProcess: ownCompanion,
    workers,
    startWorker,
    spawnWorker: spawnOne,
    async stopWorkers() {
      await Promise.all(workers.splice(0).map(stopGracefully));
    },
    async stop() {
      await Promise.all(workers.map((w) => w.kill('SIGKILL')));
      await gateway.stop();
      await stopCompanion();
      await model.stop();
      await Promise.all(databases.map((database) => database.drop().catch(() => undefined)));
    },
  };
}

async function stopGracefully(worker: WorkerProcess): Promise<void> {
  const { child } = worker;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGCONT');
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await worker.kill('SIGTERM');
  clearTimeout(killer);
}

/** Who calls a gateway (with `token`, or none): `@rudder/client` as a team does, and the raw API (http.ts) for the SPEC's exact answers. */
export const callerOf = (baseUrl: string, token?: string): { client: RudderClient; http: Http } => ({
  client: new RudderClient({ baseUrl, token }),
  http: createHttp(baseUrl, token),
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function spawnWorker(env: Record<string, string>, entry = 'apps/turn-worker/src/main.ts', bundles?: Bundles): WorkerProcess {
  const child = spawn(process.execPath, nodeArgs(entry, bundles), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return workerProcess(child);
}

/** A turn worker started some other way (a team's app outside the repository, say), its stdout and stderr piped. */
export function workerProcess(child: ChildProcess): WorkerProcess {
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

/** How long the tests' `vi.waitFor` waits for a condition (vitest's default is 1 s), asking every 50 ms. */
export const WAIT = { timeout: 30_000, interval: 50 };

/** The companion in its own process, on a port that stays the same across restarts. */
export type CompanionProcess = {
  port: number;
  url: string;
  /** Everything every incarnation wrote on stdout and stderr. */
  output(): string;
  /** Starts an incarnation; resolves once it logged "companion is up" (migrated, serving, consuming). */
  start(): Promise<void>;
  /** Signals the running incarnation (SIGKILL by default) and resolves once it is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
};

export function companionProcess(env: Record<string, string>, port: number, bundles?: Bundles): CompanionProcess {
  let child: ChildProcess | undefined;
  let output = '';
  const alive = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    async start() {
      if (alive()) throw new Error('the companion is already running');
      const started = output.length;
      const launched = spawn(process.execPath, nodeArgs('apps/companion/src/main.ts', bundles), {
        cwd: ROOT,
        env: { ...process.env, ...env, COMPANION_PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = launched;
      await withTimeout(
        new Promise<void>((resolve, reject) => {
          const collect = (chunk: Buffer) => {
            output += chunk.toString();
            if (output.slice(started).includes('companion is up')) resolve();
          };
          launched.stdout!.on('data', collect);
          launched.stderr!.on('data', collect);
          launched.once('exit', (code, signal) => reject(new Error(`the companion exited (${code ?? signal}) before it was up:\n${output.slice(started)}`)));
        }),
        60_000,
        () => `the companion was not up in time:\n${output.slice(started)}`,
      );
    },
    async kill(signal = 'SIGKILL') {
      const running = child;
      if (!running || !alive()) return;
      const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
      running.kill(signal);
      await exited;
    },
  };
}

/** A port nothing listens on now (the system picks it, then it is released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
