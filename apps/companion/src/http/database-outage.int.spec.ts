import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLocalPostgres, type LocalPostgres } from '@rudder/dev-services';
import { readConfig } from '@rudder/runtime';
import { startCompanion, type Companion } from '../start-companion';
import { quietLog } from '../../../../test/support/companion/quiet-log';

/**
 * The companion while its PostgreSQL is down, for real: this spec starts a PostgreSQL of its
 * own (the run's shared one must never go down), stops its postmaster, and starts it again.
 */
let postgres: LocalPostgres;
let companion: Companion;
const log = quietLog();

beforeAll(async () => {
  postgres = await startLocalPostgres();
  companion = await startCompanion(readConfig({ KAFKA_BROKERS: '127.0.0.1:9', DATABASE_URL: postgres.databaseUrl, COMPANION_PORT: '0' }), {
    consume: false,
    log,
  });
});
afterAll(async () => {
  await companion?.stop();
  await postgres?.stop();
});

const get = async (path: string) => {
  const response = await fetch(`http://127.0.0.1:${companion.port}${path}`);
  return { status: response.status, body: await response.json() };
};

describe('the companion while PostgreSQL is down', () => {
  it('answers 503 naming the database on every route, logs the outage once without a stack, and recovers by itself', async () => {
    const routes = ['/conversations/c-1', '/conversations/c-1/messages', '/conversations/c-1/turns/t-1', '/conversations/c-1/turns?input=i-1', '/conversations/c-1/inputs/i-1', '/conversations/c-1/events?after=0', '/healthz'];
    expect((await get('/conversations/c-1')).status).toBe(200);

    await stopPostmaster(postgres.databaseUrl);
    const down = { status: 503, body: { error: { code: 'unavailable', message: expect.stringMatching(/database \(PostgreSQL\) is not answering/), details: { database: 'unavailable' } } } };
    for (let round = 0; round < 3; round++) {
      for (const route of routes) expect({ route, ...(await get(route)) }).toEqual({ route, ...down });
    }
    const outageLines = log.lines.filter((line) => /database/.test(line));
    expect(outageLines).toEqual([expect.stringMatching(/^warn the database is unavailable: answering 503 until it is back/)]);
    expect(log.lines.join('\n')).not.toMatch(/\n\s+at /); // no stack traces
    expect(log.lines.filter((line) => line.startsWith('error'))).toEqual([]);

    await postgres.restart();
    await vi.waitFor(async () => expect((await get('/conversations/c-1')).status).toBe(200), { timeout: 10_000, interval: 100 });
    for (const route of routes.filter((r) => !/turns|inputs/.test(r))) expect((await get(route)).status, route).toBe(200);
    await vi.waitFor(() => expect(log.lines.join('\n')).toMatch(/the database answers again/), { timeout: 5000, interval: 100 });
    expect(log.lines.filter((line) => /the database answers again/.test(line))).toEqual([expect.stringMatching(/"answered503":(1[89]|[2-9]\d|\d{3,})\}/)]);
  });
});

/** SIGINT to the postmaster (a fast shutdown: every connection dropped), then waits until it is gone. */
async function stopPostmaster(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
  await client.end();
  const pid = Number((await readFile(join(rows[0].data_directory, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  process.kill(pid, 'SIGINT');
  await vi.waitFor(() => expect(() => process.kill(pid, 0)).toThrow(), { timeout: 30_000, interval: 50 });
}
