import { cp, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevServicesError } from './errors';
import { postgresBinaries, startLocalPostgres } from './postgres';

const asRoot = process.getuid?.() === 0;
const TIMEOUT = 60_000;

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

const currentUser = async (url: string) => (await query<{ user: string }>(url, 'select current_user as user'))[0].user;

describe('startLocalPostgres', { timeout: TIMEOUT }, () => {
  it('committed data survives restart(), on the same address', async () => {
    const server = await startLocalPostgres();
    try {
      await query(server.databaseUrl, 'create table kept (x int); insert into kept values (1)');
      await server.restart();
      expect(await query(server.databaseUrl, 'select x from kept')).toEqual([{ x: 1 }]);
    } finally {
      await server.stop();
    }
  });
});

// PostgreSQL refuses root, so as root it runs as the `postgres` user, which cannot enter a
// clone in a 0700 home (a container's /root, say).
describe.runIf(asRoot)('startLocalPostgres as root', { timeout: TIMEOUT }, () => {
  let home: string;
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'rudder-private-home-')); // 0700, root's
  });
  afterAll(() => rm(home, { recursive: true, force: true }));

  it('runs binaries that lie in a directory only root can enter', async () => {
    const binaries = join(home, 'node_modules', 'native');
    await mkdir(binaries, { recursive: true });
    await cp(postgresBinaries(), binaries, { recursive: true, verbatimSymlinks: true });

    const server = await startLocalPostgres({ binaries });
    try {
      expect(await currentUser(server.databaseUrl)).toBe('postgres');
      await server.restart();
      expect(await currentUser(server.databaseUrl)).toBe('postgres');
    } finally {
      await server.stop();
    }
  });

  it('says in one sentence what to do when the postgres user cannot enter TMPDIR', async () => {
    const privateTmp = join(home, 'tmp');
    await mkdir(privateTmp);
    const before = process.env.TMPDIR;
    process.env.TMPDIR = privateTmp;
    try {
      const failure = await startLocalPostgres().then(
        (server) => server.stop().then(() => undefined),
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(DevServicesError);
      expect(failure).toMatchObject({ code: 'POSTGRES_UNREACHABLE' });
      expect((failure as Error).message).toMatch(/^PostgreSQL must run as the "postgres" user .*: set TMPDIR .*\.$/);
      expect((failure as Error).message).not.toContain('\n');
      expect(await readdir(privateTmp)).toEqual([]); // nothing left behind
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
  });
});
