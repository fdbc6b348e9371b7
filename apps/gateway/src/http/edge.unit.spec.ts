import { ChatBody } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors/gateway-error';
import { checkTextLength, clientIdOf, conversationKeyOf, parseEdge, requireJsonBody } from './edge';

/** The checks at the HTTP edge that a chat's and a steer's message pass, each refusal with its code and message. */
function refusal(check: () => unknown): GatewayError {
  try {
    check();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('not refused');
}

describe('the HTTP edge', () => {
  it('parseEdge answers the parsed value, or 400 naming what and its failing paths', () => {
    expect(parseEdge(ChatBody, { text: ' hi ' }, 'chat body')).toEqual({ text: 'hi' });
    const error = refusal(() => parseEdge(ChatBody, { text: 7 }, 'chat body'));
    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/^bad chat body: text: /);
  });

  it('conversationKeyOf takes a key, refuses one outside the alphabet or with a "." or ".." segment', () => {
    expect(conversationKeyOf('user-42/trip')).toBe('user-42/trip');
    expect(refusal(() => conversationKeyOf('a b')).message).toMatch(/^bad conversation key: /);
    for (const key of ['..', 'a/./b']) {
      const error = refusal(() => conversationKeyOf(key));
      expect([error.code, error.message]).toEqual(['bad_request', 'bad conversation key: it may not be or hold a "." or ".." segment']);
    }
  });

  it('requireJsonBody refuses a request without a JSON body, and only that', () => {
    const error = refusal(() => requireJsonBody(undefined));
    expect([error.code, error.message]).toEqual(['bad_request', 'send a JSON object body with Content-Type: application/json']);
    for (const body of [null, {}, '', 0]) expect(() => requireJsonBody(body)).not.toThrow();
  });

  it('checkTextLength counts code points and refuses past the limit with 413, the path, the length and the limit', () => {
    expect(() => checkTextLength('😀'.repeat(5), 'text', 5)).not.toThrow();
    expect(() => checkTextLength('', 'text', 0)).not.toThrow();
    const error = refusal(() => checkTextLength('😀'.repeat(6), 'messages.1', 5));
    expect([error.code, error.message, error.details]).toEqual(['text_too_long', 'messages.1 has 6 characters; at most 5 are accepted', { path: 'messages.1', length: 6, max: 5 }]);
  });

  it('clientIdOf takes the body id or the header, the same id in both; refuses two ids, a bad header and a dot-segment id', () => {
    expect(clientIdOf(undefined, undefined)).toBeUndefined();
    expect(clientIdOf('i-1', undefined)).toBe('i-1');
    expect(clientIdOf(undefined, 'i-2')).toBe('i-2');
    expect(clientIdOf('i-3', 'i-3')).toBe('i-3');
    const two = refusal(() => clientIdOf('i-1', 'i-2'));
    expect([two.code, two.message]).toEqual(['bad_request', 'the body id and the Idempotency-Key header differ; send one id']);
    expect(refusal(() => clientIdOf(undefined, 'a b')).message).toMatch(/^bad Idempotency-Key header: /);
    for (const id of ['..', 'x/./y']) {
      const dots = refusal(() => clientIdOf(id, undefined));
      expect([dots.code, dots.message]).toEqual(['bad_request', 'bad id: an id may not be or hold a "." or ".." segment']);
    }
  });
});
