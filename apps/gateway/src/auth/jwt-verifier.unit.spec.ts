import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { JwtVerifier, type JwtSettings } from './jwt-verifier';

const SECRET = 'another-shared-secret-of-32-characters';
const base: JwtSettings = { AUTH_JWT_SECRET: SECRET, AUTH_JWT_ISSUER: 'issuer', AUTH_JWT_AUDIENCE: 'aud', AUTH_JWT_SUBJECT_CLAIM: 'sub' };
const hs256 = (payload: Record<string, unknown>) =>
  new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('issuer')
    .setAudience(['other', 'aud'])
    .setExpirationTime('1m')
    .sign(new TextEncoder().encode(SECRET));

describe('JwtVerifier', () => {
  it('takes the subject from the configured claim, and refuses a token without it', async () => {
    const verifier = JwtVerifier.fromConfig({ ...base, AUTH_JWT_SUBJECT_CLAIM: 'email' })!;
    expect(await verifier.subjectOf(await hs256({ sub: 'u-1', email: 'ann@example.test' }))).toBe('ann@example.test');
    await expect(verifier.subjectOf(await hs256({ sub: 'u-1' }))).rejects.toThrow(/no usable "email" claim/);
    await expect(verifier.subjectOf(await hs256({ email: 'x'.repeat(201) }))).rejects.toThrow(/no usable "email" claim/);
    await expect(verifier.subjectOf(await hs256({ email: 'a\u0000b' }))).rejects.toThrow(/no usable "email" claim/);
  });

  it('is null without a secret or a JWKS URL', () => {
    expect(JwtVerifier.fromConfig({ AUTH_JWT_SUBJECT_CLAIM: 'sub' })).toBeNull();
  });

  it('a JWKS that cannot be fetched is 503 unavailable naming it, not a 401: the token may be good', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/jwks`;
    await new Promise((resolve) => closed.close(resolve));
    const verifier = JwtVerifier.fromConfig({ ...base, AUTH_JWT_SECRET: undefined, AUTH_JWKS_URL: url })!;
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({ sub: 's' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k' })
      .setIssuer('issuer')
      .setAudience('aud')
      .setExpirationTime('1m')
      .sign(privateKey);
    await expect(verifier.subjectOf(token)).rejects.toMatchObject({ code: 'unavailable', details: { jwks: 'unavailable' } });
    // HS256 is not accepted by a JWKS-only verifier.
    await expect(verifier.subjectOf(await hs256({ sub: 's' }))).rejects.toThrow(/signed with HS256; this gateway accepts RS256, ES256/);
  });
});
