import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors/gateway-error';
import { ANONYMOUS, Authenticator } from './authenticator';
import { mayAccess } from './conversation-access';

describe('Authenticator', () => {
  it('without AUTH_TOKENS every request is anonymous, token or not', () => {
    for (const unset of [undefined, '', '  ']) {
      const open = Authenticator.fromConfig(unset);
      expect(open.open).toBe(true);
      expect(open.subjectOf(undefined)).toBe(ANONYMOUS);
      expect(open.subjectOf('Bearer whatever')).toBe(ANONYMOUS);
    }
  });

  it('maps bearer tokens to their subjects and refuses the rest with unauthorized', () => {
    const auth = Authenticator.fromConfig('tokenA=alice, tokenB=bob');
    expect(auth.subjectOf('Bearer tokenA')).toBe('alice');
    expect(auth.subjectOf('bearer tokenB')).toBe('bob');
    for (const header of [undefined, '', 'Bearer', 'Bearer tokenC', 'Basic tokenA', 'tokenA']) {
      expect(() => auth.subjectOf(header)).toThrow(expect.objectContaining({ code: 'unauthorized' }) as GatewayError);
    }
  });

  it('a malformed AUTH_TOKENS is a start-up error, never an open server', () => {
    for (const bad of ['tokenA', 'tokenA=', '=alice', 'tokenA=alice,,tokenB=bob']) {
      expect(() => Authenticator.fromConfig(bad)).toThrow(/AUTH_TOKENS/);
    }
  });
});

describe('mayAccess', () => {
  it('a new conversation (no owner) is open; an owned one only to its owner', () => {
    expect(mayAccess(null, 'alice', 'write')).toBe(true);
    expect(mayAccess({ owner: null }, 'alice', 'write')).toBe(true);
    expect(mayAccess({ owner: 'alice' }, 'alice', 'read')).toBe(true);
    expect(mayAccess({ owner: 'bob' }, 'alice', 'read')).toBe(false);
    expect(mayAccess({ owner: 'bob' }, 'alice', 'write')).toBe(false);
  });

  it('in open development mode every conversation is open, whoever started it', () => {
    expect(mayAccess({ owner: 'billing-service' }, 'anonymous', 'read', true)).toBe(true);
    expect(mayAccess({ owner: 'billing-service' }, 'anonymous', 'write', true)).toBe(true);
  });
});
