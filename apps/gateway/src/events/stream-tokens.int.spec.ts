import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptEverything, startHarness, turnStarted, type Harness } from '../../../../test/support/gateway/harness';
import { sseReader } from '../../../../test/support/gateway/sse-reader';

const TTL_SECONDS = 60;
let h: Harness;
/** The gateway's clock (`GatewayOptions.now`): tokens expire when a test moves it past their lifetime, not after a wait. */
let now = Date.now();
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice,tok-bob=bob', AUTH_STREAM_TOKEN_TTL_SECONDS: String(TTL_SECONDS) }, { now: () => now });
  h.worker = acceptEverything;
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const bob = { authorization: 'Bearer tok-bob' };
const path = (key: string, rest = '') => `/v1/conversations/${encodeURIComponent(key)}${rest}`;
const aliceKey = (name: string) => {
  const key = `stream-token-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
  h.companion.setStatus(key, { owner: 'alice' });
  return key;
};
async function streamToken(key: string, headers = alice): Promise<string> {
  const answer = await h.call(path(key, '/stream-tokens'), { method: 'POST', headers });
  expect(answer.status).toBe(201);
  return answer.body.token;
}

describe('POST /v1/conversations/{key}/stream-tokens', () => {
  it('gives a reader a short-lived token that opens the event stream as ?access_token= and as a bearer header', async () => {
    const key = aliceKey('open');
    const answer = await h.call(path(key, '/stream-tokens'), { method: 'POST', headers: alice, body: {} });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ token: expect.any(String), expiresAt: expect.any(String) });
    // Issued at the clock's whole second, valid for the TTL from there.
    expect(answer.body.expiresAt).toBe(new Date((Math.floor(now / 1000) + TTL_SECONDS) * 1000).toISOString());

    const byQuery = await fetch(`${h.gateway.url}${path(key, '/events')}?access_token=${encodeURIComponent(answer.body.token)}`);
    expect(byQuery.status).toBe(200);
    const events = sseReader(byQuery);
    await h.publishEvents([turnStarted(key, 7001)]);
    expect((await events.next()).id).toBe('7001');
    await events.close();

    const byHeader = await fetch(`${h.gateway.url}${path(key, '/events')}`, { headers: { authorization: `Bearer ${answer.body.token}` } });
    expect(byHeader.status).toBe(200);
    await byHeader.body?.cancel();
  });

  it('needs read access to the conversation, checked as a read is', async () => {
    const key = aliceKey('private');
    const answer = await h.call(path(key, '/stream-tokens'), { method: 'POST', headers: bob });
    expect(answer.status).toBe(403);
    expect(answer.body.error.code).toBe('forbidden');
    expect((await h.call(path(key, '/stream-tokens'), { method: 'POST' })).status).toBe(401);
    expect((await h.call(path(key, '/stream-tokens'), { headers: alice, body: { ttl: 9999 } })).status).toBe(400);
  });

  it('opens nothing else: another conversation, the status, a chat, another stream token, and nothing is enqueued', async () => {
    const key = aliceKey('scoped');
    const other = aliceKey('other');
    const token = await streamToken(key);
    const bearer = { authorization: `Bearer ${token}` };
    const produced = await h.producedDuring(async () => {
      const refusals = [
        await h.call(`${path(other, '/events')}?access_token=${token}`),
        await h.call(path(other, '/events'), { headers: bearer }),
        await h.call(path(key), { headers: bearer }),
        await h.call(path(key, '/messages'), { headers: bearer }),
        await h.call(path(key, '/chat'), { headers: bearer, body: { text: 'sneaky', id: 'sneaky-1' } }),
        await h.call(path(key, '/steer'), { headers: bearer, body: { text: 'sneaky', id: 'sneaky-2' } }),
        await h.call(path(key, '/stop'), { headers: bearer, body: {} }),
        await h.call(path(key, '/stream-tokens'), { method: 'POST', headers: bearer }),
      ];
      expect(refusals.map((r) => [r.status, r.body.error.code])).toEqual(Array(refusals.length).fill([403, 'forbidden']));
      // On any route but the stream, ?access_token= is not read at all: no credentials.
      expect((await h.call(`${path(key)}?access_token=${token}`)).status).toBe(401);
    });
    expect(produced).toEqual([]);
  });

  it('an expired, altered or main token in ?access_token= is 401, and so is a token sent twice', async () => {
    const key = aliceKey('expired');
    const token = await streamToken(key);
    const events = (query: string, headers: Record<string, string> = {}) => h.call(`${path(key, '/events')}?${query}`, { headers });
    const altered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect((await events(`access_token=${altered}`)).body.error.message).toMatch(/does not verify/);
    expect((await events('access_token=tok-alice')).body.error.message).toMatch(/stream token only/);
    expect((await events(`access_token=${token}&access_token=${token}`)).status).toBe(401);
    expect((await events(`access_token=${token}`, alice)).status).toBe(400);
    now += TTL_SECONDS * 1000;
    const late = await events(`access_token=${token}`);
    expect({ status: late.status, message: late.body.error.message }).toEqual({ status: 401, message: expect.stringMatching(/expired/) });
  });

  it("a reader who lost access is refused when the stream opens, even with a token issued before", async () => {
    const key = aliceKey('revoked');
    const token = await streamToken(key);
    h.companion.setStatus(key, { owner: 'bob' });
    const answer = await h.call(`${path(key, '/events')}?access_token=${token}`);
    expect(answer.status).toBe(403);
  });
});
