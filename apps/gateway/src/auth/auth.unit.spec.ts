import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors/gateway-error';
import { StreamTokens } from './stream-tokens';
import { ANONYMOUS, Authenticator, type AuthSettings } from './authenticator';
import { mayAccess } from '../companion/conversation-access';

const settings = (env: Partial<AuthSettings> = {}): AuthSettings => ({ AUTH_JWT_SUBJECT_CLAIM: 'sub', AUTH_STREAM_TOKEN_TTL_SECONDS: 300, ...env });
const refused = expect.objectContaining({ code: 'unauthorized' }) as GatewayError;

describe('Authenticator', () => {
  it('without AUTH_TOKENS and JWT settings every request is anonymous, token or not', async () => {
    for (const unset of [undefined, '', '  ']) {
      const open = Authenticator.fromConfig(settings({ AUTH_TOKENS: unset }));
      expect(open.open).toBe(true);
      expect(await open.authenticate(undefined)).toEqual({ subject: ANONYMOUS, stream: null });
      expect(await open.authenticate('Bearer whatever')).toEqual({ subject: ANONYMOUS, stream: null });
    }
  });

  it('maps bearer tokens to their subjects and refuses the rest with unauthorized', async () => {
    const auth = Authenticator.fromConfig(settings({ AUTH_TOKENS: 'tokenA=alice, tokenB=bob' }));
    expect(await auth.authenticate('Bearer tokenA')).toEqual({ subject: 'alice', stream: null });
    expect((await auth.authenticate('bearer tokenB')).subject).toBe('bob');
    for (const header of [undefined, '', 'Bearer', 'Bearer tokenC', 'Basic tokenA', 'tokenA', 'Bearer a.b.c']) {
      await expect(auth.authenticate(header)).rejects.toThrow(refused);
    }
  });

  it('a malformed AUTH_TOKENS is a start-up error, never an open server', () => {
    for (const bad of ['tokenA', 'tokenA=', '=alice', 'tokenA=alice,,tokenB=bob']) {
      expect(() => Authenticator.fromConfig(settings({ AUTH_TOKENS: bad }))).toThrow(/AUTH_TOKENS/);
    }
  });

  it('a half-configured JWT setting is a start-up error', () => {
    const secret = 's'.repeat(32);
    expect(() => Authenticator.fromConfig(settings({ AUTH_JWT_SECRET: secret }))).toThrow(/AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE/);
    expect(() => Authenticator.fromConfig(settings({ AUTH_JWT_SECRET: 'short', AUTH_JWT_ISSUER: 'i', AUTH_JWT_AUDIENCE: 'a' }))).toThrow(/at least 32/);
    expect(() => Authenticator.fromConfig(settings({ AUTH_JWT_ISSUER: 'i' }))).toThrow(/neither AUTH_JWT_SECRET nor AUTH_JWKS_URL/);
    expect(() =>
      Authenticator.fromConfig(settings({ AUTH_JWT_SECRET: secret, AUTH_STREAM_TOKEN_SECRET: secret, AUTH_JWT_ISSUER: 'i', AUTH_JWT_AUDIENCE: 'a' })),
    ).toThrow(/must differ/);
  });

  it('a stream token proves its subject and its one conversation; expired or altered it is unauthorized', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const tokens = StreamTokens.fromConfig({ AUTH_STREAM_TOKEN_SECRET: 'x'.repeat(32), AUTH_STREAM_TOKEN_TTL_SECONDS: 60 }, () => now);
    const { token, expiresAt } = await tokens.issue({ subject: 'alice', conversation: 'user-42/trip' });
    expect(expiresAt).toBe('2026-01-01T00:01:00.000Z');
    expect(StreamTokens.isStreamToken(token)).toBe(true);
    expect(await tokens.verify(token)).toEqual({ subject: 'alice', conversation: 'user-42/trip' });
    const [head, , signature] = token.split('.');
    const forged = `${head}.${Buffer.from(JSON.stringify({ sub: 'bob', conversation: 'user-42/trip' })).toString('base64url')}.${signature}`;
    await expect(tokens.verify(forged)).rejects.toThrow(/does not verify/);
    const other = StreamTokens.fromConfig({ AUTH_STREAM_TOKEN_TTL_SECONDS: 60 }, () => now);
    await expect(other.verify(token)).rejects.toThrow(/does not verify/);
    now += 61_000;
    await expect(tokens.verify(token)).rejects.toThrow(/expired/);
  });
});

describe('mayAccess', () => {
  it('a new conversation (no owner) may be written by anyone and read by nobody; an owned one only by its owner', () => {
    expect(mayAccess(null, 'alice', 'write')).toBe(true);
    expect(mayAccess({ owner: null }, 'alice', 'write')).toBe(true);
    expect(mayAccess(null, 'alice', 'read')).toBe(false);
    expect(mayAccess({ owner: null }, 'alice', 'read')).toBe(false);
    expect(mayAccess({ owner: 'alice' }, 'alice', 'read')).toBe(true);
    expect(mayAccess({ owner: 'bob' }, 'alice', 'read')).toBe(false);
    expect(mayAccess({ owner: 'bob' }, 'alice', 'write')).toBe(false);
  });

  it('in open development mode every conversation is open, whoever started it', () => {
    expect(mayAccess({ owner: 'billing-service' }, 'anonymous', 'read', true)).toBe(true);
    expect(mayAccess({ owner: 'billing-service' }, 'anonymous', 'write', true)).toBe(true);
  });
});
