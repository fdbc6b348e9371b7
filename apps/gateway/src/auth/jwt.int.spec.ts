import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptEverything, startHarness, type Harness } from '../../../../test/support/gateway/harness';

/**
 * JWTs at the running gateway: RS256 and ES256 keys served by a JWKS HTTP server of the
 * test's own, HS256 with a shared secret, and the static AUTH_TOKENS beside them.
 */
const ISSUER = 'https://id.example.test/';
const AUDIENCE = 'rudder-api';
const SECRET = 'a-shared-hs256-secret-of-32-characters!';

type Signer = { kid: string; alg: 'RS256' | 'ES256'; privateKey: CryptoKey; jwk: JWK };
async function signer(kid: string, alg: 'RS256' | 'ES256'): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

let jwks: Server;
let jwksRequests = 0;
let rsa: Signer;
let ec: Signer;
let stranger: Signer;
let h: Harness;

beforeAll(async () => {
  [rsa, ec, stranger] = await Promise.all([signer('rsa-1', 'RS256'), signer('ec-1', 'ES256'), signer('rsa-1', 'RS256')]);
  jwks = createServer((_request, response) => {
    jwksRequests++;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [rsa.jwk, ec.jwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  h = await startHarness({
    AUTH_TOKENS: 'tok-alice=alice',
    AUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`,
    AUTH_JWT_SECRET: SECRET,
    AUTH_JWT_ISSUER: ISSUER,
    AUTH_JWT_AUDIENCE: AUDIENCE,
  });
  h.worker = acceptEverything;
});
afterAll(async () => {
  await h?.stop();
  await new Promise((resolve) => jwks?.close(resolve));
});

type Claims = { sub?: unknown; iss?: string; aud?: string | string[]; exp?: number; [claim: string]: unknown };
const now = () => Math.floor(Date.now() / 1000);
const claims = (extra: Claims = {}): Claims => ({ sub: 'carol', iss: ISSUER, aud: AUDIENCE, exp: now() + 60, ...extra });

function sign(key: Signer | 'hs256', payload: Claims = claims(), header: Record<string, string> = {}): Promise<string> {
  const { exp, ...rest } = payload;
  const jwt = new SignJWT(rest as JWTPayload);
  if (exp !== undefined) jwt.setExpirationTime(exp);
  if (key === 'hs256') return jwt.setProtectedHeader({ alg: 'HS256', ...header }).sign(new TextEncoder().encode(SECRET));
  return jwt.setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey);
}

const uniqueKey = (name: string) => `jwt-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const chatAs = (token: string, key: string, id: string) =>
  h.call(`/v1/conversations/${encodeURIComponent(key)}/chat`, { body: { text: 'hello', id }, headers: { authorization: `Bearer ${token}` } });

describe('JWT authentication', () => {
  it('an RS256 and an ES256 token from the JWKS, and an HS256 token with the secret, each write as their subject', async () => {
    for (const [key, subject] of [[rsa, 'rita'], [ec, 'eve'], ['hs256', 'hal']] as const) {
      const id = `jwt-${subject}-${Math.random().toString(36).slice(2, 6)}`;
      const answer = await chatAs(await sign(key, claims({ sub: subject })), uniqueKey(subject), id);
      expect({ subject, status: answer.status }).toEqual({ subject, status: 202 });
      expect((await h.inputArrived(id)).value.subject).toBe(subject);
    }
    expect(jwksRequests).toBeGreaterThanOrEqual(1);
  });

  it('AUTH_TOKENS still work beside JWTs, and a JWT subject is the same name as a token subject', async () => {
    const key = uniqueKey('same');
    h.companion.setStatus(key, { owner: 'alice' });
    expect((await chatAs('tok-alice', key, 'same-1')).status).toBe(202);
    expect((await chatAs(await sign(rsa, claims({ sub: 'alice' })), key, 'same-2')).status).toBe(202);
    expect((await chatAs(await sign(rsa, claims({ sub: 'mallory' })), key, 'same-3')).status).toBe(403);
  });

  it('a missing, expired, wrongly issued or addressed, forged or unsigned token is 401 saying what is wrong, and nothing is enqueued', async () => {
    const key = uniqueKey('refused');
    const header = (token: string) => `Bearer ${token}`;
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}.`;
    const cases: [string, string | undefined, RegExp][] = [
      ['no token', undefined, /Authorization: Bearer/],
      ['expired', header(await sign(rsa, claims({ exp: now() - 120 }))), /expired/],
      ['without exp', header(await sign(ec, claims({ exp: undefined }))), /"exp" claim/],
      ['another issuer', header(await sign(rsa, claims({ iss: 'https://evil.test/' }))), /"iss" claim/],
      ['another audience', header(await sign(ec, claims({ aud: 'someone-else' }))), /"aud" claim/],
      ['no subject', header(await sign('hs256', claims({ sub: undefined }))), /no usable "sub" claim/],
      ['a subject that is no string', header(await sign('hs256', claims({ sub: 42 }))), /no usable "sub" claim/],
      ['signed by a key the JWKS does not hold, under its kid', header(await sign(stranger)), /signature does not verify/],
      ['a kid the JWKS does not have', header(await sign({ ...stranger, kid: 'nope' })), /no key of the JWKS/],
      ['HS256 with another secret', header(await new SignJWT(claims() as JWTPayload).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(40)))), /signature/],
      ['alg none', header(unsigned), /signed with none/],
      ['not a JWT at all', header('not.a.jwt'), /not a well-formed JWT/],
    ];
    const produced = await h.producedDuring(async () => {
      for (const [name, authorization, message] of cases) {
        const answer = await h.call(`/v1/conversations/${encodeURIComponent(key)}/chat`, {
          body: { text: 'hi', id: 'refused-1' },
          headers: authorization === undefined ? {} : { authorization },
        });
        expect({ name, status: answer.status, code: answer.body?.error?.code }).toEqual({ name, status: 401, code: 'unauthorized' });
        expect(answer.body.error.message, name).toMatch(message);
        expect(answer.headers.get('www-authenticate'), name).toBe('Bearer');
      }
    });
    expect(produced).toEqual([]);
  });
});
