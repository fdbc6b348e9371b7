import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';

/**
 * The gateway while the companion, or the companion's database, is away: 503 `unavailable`
 * naming what is down, logged once per outage, and back to normal by itself. The companion
 * here is a small server of the test's own that answers as the real one does in each state
 * (apps/companion/src/http/database-outage.int.spec.ts stops a real PostgreSQL under the
 * real companion).
 */
type Mode = 'database down' | 'up';
let mode: Mode = 'up';
let companion: Server;
let h: Harness;
const lines: string[] = [];
const line = (level: string) => (message: string, fields?: Record<string, unknown>) => lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`) > 0;
const log = { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), child: () => log };

beforeAll(async () => {
  companion = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    if (mode === 'database down') {
      response.statusCode = 503;
      response.end(JSON.stringify({ error: { code: 'unavailable', message: 'the database (PostgreSQL) is not answering; try again shortly', details: { database: 'unavailable' } } }));
      return;
    }
    const key = decodeURIComponent((request.url ?? '').split('/')[2] ?? '');
    response.end(JSON.stringify({ key, running: null, steering: [], queue: [], lastInputId: null, agent: null, owner: 'anonymous', grants: [] }));
  });
  await new Promise<void>((resolve) => companion.listen(0, '127.0.0.1', resolve));
  h = await startHarness({ COMPANION_URL: `http://127.0.0.1:${(companion.address() as AddressInfo).port}` }, { log, decisionTimeoutMs: 3000 });
});
afterAll(async () => {
  await h?.stop();
  companion?.closeAllConnections();
  await new Promise((resolve) => companion?.close(resolve));
});

const outageLines = () => lines.filter((line) => /the companion (unavailable|answers again)/.test(line));

describe('outages seen by the gateway', () => {
  it("while the companion's database is down, reads and writes answer 503 naming the companion and the database, logged once, then recover", async () => {
    expect((await h.call('/v1/conversations/o-1')).status).toBe(200);
    mode = 'database down';
    const produced = await h.producedDuring(async () => {
      for (let i = 0; i < 5; i++) {
        for (const answer of [await h.call('/v1/conversations/o-1'), await h.call('/v1/conversations/o-1/chat', { body: { text: 'hi', id: `o-${i}` } })]) {
          expect(answer.status).toBe(503);
          expect(answer.body.error).toEqual({
            code: 'unavailable',
            message: expect.stringMatching(/companion \(read side\) cannot answer: the database \(PostgreSQL\) is not answering/),
            details: { companion: 'unavailable', database: 'unavailable' },
          });
        }
      }
    });
    expect(produced).toEqual([]);
    expect(outageLines()).toEqual([expect.stringMatching(/^warn the companion unavailable: answering 503 until it is back/)]);
    mode = 'up';
    expect((await h.call('/v1/conversations/o-1')).status).toBe(200);
    expect(outageLines()).toHaveLength(2);
    expect(outageLines()[1]).toMatch(/^info the companion answers again .*"answered503":10/);
    expect(lines.filter((line) => line.startsWith('error'))).toEqual([]);
  });

  it('a companion that does not answer at all is 503 naming the companion', async () => {
    const port = (companion.address() as AddressInfo).port;
    companion.closeAllConnections();
    await new Promise((resolve) => companion.close(resolve));
    try {
      const answer = await h.call('/v1/conversations/o-2');
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatchObject({ code: 'unavailable', message: expect.stringMatching(/companion/), details: { companion: 'unavailable' } });
    } finally {
      await new Promise<void>((resolve) => companion.listen(port, '127.0.0.1', resolve));
    }
    expect((await h.call('/v1/conversations/o-2')).status).toBe(200);
  });
});
