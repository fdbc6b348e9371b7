import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { startGateway } from '@rudder/gateway';
import type { DataSource } from 'typeorm';
import { startCompanion, type Companion } from '../start-companion';
import { foldEvents } from '../projection/fold-events';
import { openReadModels } from '../read-models/data-source';
import { createFreshDatabase } from '../../../../test/support/companion/test-database';
import { chatWithToolCall } from '../../../../test/support/companion/conversation-log';
import { quietLog } from '../../../../test/support/companion/quiet-log';

/**
 * SPEC "Access and consistency": internal service ports listen on loopback unless an operator
 * binds them elsewhere with a service token. The companion's API serves every conversation
 * to whoever reaches it, so: 127.0.0.1 by default; bound wide only with COMPANION_TOKEN, which
 * every request but /healthz and /metrics must carry, and which the gateway sends.
 */
let database: Awaited<ReturnType<typeof createFreshDatabase>>;
let readModels: DataSource;
const TOKEN = 'a-service-token-of-some-length';
const KEY = 'service-token/trip';

beforeAll(async () => {
  database = await createFreshDatabase();
  readModels = await openReadModels(database.url);
  await foldEvents(readModels, chatWithToolCall(KEY));
});
afterAll(async () => {
  await readModels?.destroy();
  await database?.drop();
});

const config = (env: Record<string, string>) => readConfig({ KAFKA_BROKERS: '127.0.0.1:9', DATABASE_URL: database.url, COMPANION_PORT: '0', ...env });
const start = (env: Record<string, string> = {}) => startCompanion(config(env), { consume: false, log: quietLog() });
/** An address of this machine that is not loopback: what another machine on its network would connect to. */
const outsideAddress = (): string => {
  const found = Object.values(networkInterfaces()).flat().find((i) => i !== undefined && !i.internal && i.family === 'IPv4');
  if (!found) throw new Error('this machine has no IPv4 address besides loopback: the binding cannot be tested from outside');
  return found.address;
};
/** Whether a TCP connection to host:port is accepted. */
const accepts = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
const status = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url, { headers });
  return { status: response.status, body: (await response.json()) as any };
};

describe("the companion's binding and service token", () => {
  it('listens on 127.0.0.1 by default: reachable on loopback, not on the machine\'s other addresses', async () => {
    const companion = await start();
    try {
      expect(await accepts('127.0.0.1', companion.port)).toBe(true);
      expect(await accepts(outsideAddress(), companion.port)).toBe(false);
      expect((await status(`http://127.0.0.1:${companion.port}/conversations/${encodeURIComponent(KEY)}`)).status).toBe(200);
    } finally {
      await companion.stop();
    }
  });

  it('refuses to start bound beyond loopback without COMPANION_TOKEN, or with one too short, saying why', async () => {
    await expect(start({ COMPANION_HOST: '0.0.0.0' })).rejects.toThrow(/COMPANION_HOST=0\.0\.0\.0 .*set COMPANION_TOKEN/);
    await expect(start({ COMPANION_HOST: outsideAddress() })).rejects.toThrow(/set COMPANION_TOKEN/);
    await expect(start({ COMPANION_HOST: '0.0.0.0', COMPANION_TOKEN: 'short' })).rejects.toThrow(/COMPANION_TOKEN has 5 characters/);
  });

  describe('bound wide with a token', () => {
    let companion: Companion;
    let url: string;
    beforeAll(async () => {
      companion = await start({ COMPANION_HOST: '0.0.0.0', COMPANION_TOKEN: TOKEN });
      url = `http://${outsideAddress()}:${companion.port}`;
    });
    afterAll(() => companion?.stop());

    it('answers a request without the token 401 and one with another token 403, on every conversation route', async () => {
      for (const path of [`/conversations/${encodeURIComponent(KEY)}`, `/conversations/${encodeURIComponent(KEY)}/events?after=0`, `/conversations/${encodeURIComponent(KEY)}/messages`]) {
        expect(await status(url + path), path).toEqual({ status: 401, body: { error: { code: 'unauthorized', message: expect.stringMatching(/COMPANION_TOKEN/) } } });
        expect((await status(url + path, { authorization: 'Bearer another-token-of-some-length' })).status, path).toBe(403);
        expect((await status(url + path, { authorization: TOKEN })).status, path).toBe(401);
        expect((await status(url + path, { authorization: `Bearer ${TOKEN}` })).status, path).toBe(200);
      }
      // What carries no conversation data stays open: a health probe, Prometheus.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/metrics`)).status).toBe(200);
    });

    it('a gateway with the token reads through it; one without is 503 (its configuration), never the companion\'s 401', async () => {
      const env = { KAFKA_BROKERS: inject('kafkaBrokers'), DATABASE_URL: database.url, KAFKA_NAMESPACE: `st${companion.port}.`, KAFKA_PARTITIONS: '1', GATEWAY_PORT: '0', COMPANION_URL: url };
      await ensureTopics(createKafka(env.KAFKA_BROKERS, 'service-token-test'), topicNames(env.KAFKA_NAMESPACE), 1);
      const withToken = await startGateway(readConfig({ ...env, COMPANION_TOKEN: TOKEN }), { log: quietLog() });
      const without = await startGateway(readConfig(env), { log: quietLog() });
      try {
        const read = await status(`${withToken.url}/v1/conversations/${encodeURIComponent(KEY)}`);
        expect(read).toMatchObject({ status: 200, body: { key: KEY, lastInputId: 'i1' } });
        const refused = await status(`${without.url}/v1/conversations/${encodeURIComponent(KEY)}`);
        expect(refused).toMatchObject({ status: 503, body: { error: { code: 'unavailable', details: { companion: 'unauthorized' } } } });
      } finally {
        await withToken.stop();
        await without.stop();
      }
    });
  });
});
