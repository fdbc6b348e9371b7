import { setTimeout as sleep } from 'node:timers/promises';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { isAlive, startLocalKafka, startLocalPostgres, type LocalKafka, type LocalPostgres } from '@rudder/dev-services';
import { startSystem, type Stack, type StackOptions } from './system';

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
   * `pg_ctl stop -m immediate`: SIGQUIT to the postmaster (no checkpoint, every backend dropped
   * at once; the next start runs crash recovery). Resolves once it is gone; `postgres.restart()`
   * starts it again on the same data dir and port.
   */
  stopPostgresImmediately(): Promise<void>;
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
    async stopPostgresImmediately() {
      const pid = await postmasterPid(postgres.value.databaseUrl);
      process.kill(pid, 'SIGQUIT');
      while (isAlive(pid)) await sleep(50);
    },
    async stop() {
      await Promise.all([kafka.value.stop(), postgres.value.stop()]);
    },
  };
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

/**
 * The whole system (test/system.ts) on the Kafka and PostgreSQL given: a fresh database on
 * `databaseServerUrl` and a fresh topic namespace; `companion: 'process'` runs the companion as
 * a child process the test can SIGKILL and start again.
 */
export const startStackOn = (infrastructure: { kafkaBrokers: string; databaseServerUrl: string }, options: StackOptions = {}): Promise<Stack> =>
  startSystem({ kafkaBrokers: infrastructure.kafkaBrokers, databaseUrl: infrastructure.databaseServerUrl, bundles: inject('bundles') }, options);
