import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../errors/gateway-error';
import { answerClientErrorsAsJson, checkParsedBody, checkRequestHead, isDotSegment, MAX_JSON_DEPTH, MAX_URL_CHARS, verifyJsonDepth } from './request-checks';

/**
 * The checks of every request, one by one, on requests made up here (hostile-input.int.spec.ts
 * sends them to a running gateway): what each refuses, with which message, and what it lets by.
 */
type Head = { url?: string; method?: string; headers?: Record<string, string> };
const response = {} as ServerResponse;

/** What `check` passed to `next`: undefined when it let the request by, else its refusal's message. */
function verdict(check: typeof checkRequestHead, request: object): string | undefined {
  const next = vi.fn();
  check(request as IncomingMessage, response, next);
  expect(next).toHaveBeenCalledTimes(1);
  const [error] = next.mock.calls[0];
  if (error === undefined) return undefined;
  expect(error).toBeInstanceOf(GatewayError);
  expect((error as GatewayError).code).toBe('bad_request');
  return (error as GatewayError).message;
}
const head = ({ url = '/v1/conversations/c/chat', method = 'POST', headers = {} }: Head) => verdict(checkRequestHead, { url, method, headers });
const json = { 'content-type': 'application/json', 'content-length': '2' };

describe('checkRequestHead', () => {
  it('lets a well-formed request by: a JSON body on POST, none on GET, a query, a request without a URL or method', () => {
    expect(head({ headers: json })).toBeUndefined();
    expect(head({ headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': '2' } })).toBeUndefined();
    expect(head({ headers: { 'content-type': ' Application/JSON ; Charset="UTF-8"; ', 'transfer-encoding': 'chunked' } })).toBeUndefined();
    expect(head({ method: 'GET', url: '/v1/conversations/c?after=3' })).toBeUndefined();
    expect(head({ method: 'DELETE', headers: { 'content-length': '0' } })).toBeUndefined();
    expect(head({ method: 'POST', headers: { 'content-length': '0' } })).toBeUndefined();
    expect(verdict(checkRequestHead, { headers: {} })).toBeUndefined();
    expect(head({ url: `/v1/conversations/${'k'.repeat(MAX_URL_CHARS - 18)}` })).toBeUndefined();
    expect(head({ url: '/v1/conversations/a.b/inputs/..x/x..' })).toBeUndefined();
  });

  it('refuses a URL over MAX_URL_CHARS, saying its length', () => {
    const url = `/v1/conversations/${'k'.repeat(MAX_URL_CHARS - 17)}`;
    expect(url).toHaveLength(MAX_URL_CHARS + 1);
    expect(head({ url })).toBe(`the URL has ${MAX_URL_CHARS + 1} characters; at most ${MAX_URL_CHARS} are accepted`);
  });

  it('refuses a path with a malformed escape, a control character, or a "." or ".." segment, encoded or not; the query is not a path', () => {
    expect(head({ url: '/v1/conversations/%E0%A4%A' })).toBe('the path holds a malformed percent-encoding');
    expect(head({ url: '/v1/conversations/a%00b' })).toBe('the path holds a control character (NUL, say)');
    expect(head({ url: '/v1/conversations/a%7Fb' })).toBe('the path holds a control character (NUL, say)');
    const dots = 'a key or id in the path may not be or hold a "." or ".." segment';
    expect(head({ url: '/v1/conversations/../chat' })).toBe(dots);
    expect(head({ url: '/v1/conversations/./chat' })).toBe(dots);
    expect(head({ url: '/v1/conversations/a%2F..%2Fb/chat' })).toBe(dots);
    expect(head({ url: '/v1/conversations/a%2F.' })).toBe(dots);
    expect(head({ url: '/v1/conversations/c?x=..&y=%00&z=%E0%A4%A' })).toBeUndefined();
  });

  it('refuses a bad Idempotency-Key or Last-Event-ID, whatever the route', () => {
    expect(head({ method: 'GET', headers: { 'idempotency-key': 'a b' } })).toBe('bad Idempotency-Key header: an input id holds only letters, digits and . _ : / -');
    expect(head({ method: 'GET', headers: { 'idempotency-key': '' } })).toBe('bad Idempotency-Key header: an input id has 1 to 200 characters');
    expect(head({ method: 'GET', headers: { 'idempotency-key': 'a/../b' } })).toBe('bad Idempotency-Key header: an id may not be or hold a "." or ".." segment');
    expect(head({ method: 'GET', headers: { 'idempotency-key': 'i-1.2' } })).toBeUndefined();
    const lastEventId = 'bad Last-Event-ID header: the id of an event received (a position, or <position>.<offset> for a token)';
    expect(head({ method: 'GET', headers: { 'last-event-id': 'x' } })).toBe(lastEventId);
    // Node joins a repeated header into one string; an array (which a string's pattern would read as "12") is refused all the same.
    expect(verdict(checkRequestHead, { url: '/', method: 'GET', headers: { 'last-event-id': ['12'] } })).toBe(lastEventId);
    expect(head({ method: 'GET', headers: { 'last-event-id': '12' } })).toBeUndefined();
    expect(head({ method: 'GET', headers: { 'last-event-id': '12.3' } })).toBeUndefined();
  });

  it('refuses a body on GET, HEAD and DELETE, framed by length or chunked', () => {
    for (const method of ['GET', 'HEAD', 'DELETE']) {
      expect(head({ method, headers: json })).toBe(`${method} takes no body; send it without one`);
      expect(head({ method, headers: { 'transfer-encoding': 'chunked', 'content-type': 'application/json' } })).toBe(`${method} takes no body; send it without one`);
    }
    expect(verdict(checkRequestHead, { url: '/', headers: json })).toBe('GET takes no body; send it without one');
  });

  it('refuses a body that is not application/json, or has a parameter other than charset=utf-8', () => {
    const notJson = 'send the body as JSON with Content-Type: application/json';
    for (const contentType of [undefined, 'text/plain', 'application/json; charset=latin1', 'application/json; boundary=x', 'application/jsonx', 'x-application/json']) {
      const headers: Record<string, string> = { 'content-length': '2' };
      if (contentType !== undefined) headers['content-type'] = contentType;
      expect(head({ headers }), contentType).toBe(notJson);
    }
    expect(head({ method: 'PATCH', headers: { 'transfer-encoding': 'chunked', 'content-type': 'text/plain' } })).toBe(notJson);
    expect(head({ method: 'POST', headers: { 'content-type': 'text/plain' } })).toBeUndefined();
  });
});

describe('checkParsedBody', () => {
  const body = (value: unknown) => verdict(checkParsedBody, { body: value });

  it('refuses __proto__, constructor and prototype as a key anywhere, naming it', () => {
    expect(body(JSON.parse('{"text":"hi","__proto__":{"admin":true}}'))).toBe('the body holds the key "__proto__", which is never accepted');
    expect(body({ a: [1, { b: [{ constructor: 1 }] }] })).toBe('the body holds the key "constructor", which is never accepted');
    expect(body([[{ x: null }], { prototype: {} }])).toBe('the body holds the key "prototype", which is never accepted');
    const next = vi.fn();
    checkParsedBody({ body: { constructor: 1 } } as never, response, next);
    expect(next.mock.calls[0][0].details).toEqual({ key: 'constructor' });
  });

  it('lets by bodies without them: none, scalars, null, deep and wide ones, the names as values', () => {
    for (const value of [undefined, null, 42, 'constructor', { text: 'constructor', list: ['__proto__', null, { deep: { deeper: [] } }] }]) {
      expect(body(value)).toBeUndefined();
    }
    expect(body(Array.from({ length: 300_000 }, () => 1))).toBeUndefined();
  });
});

describe('verifyJsonDepth', () => {
  const depth = (json: string) => () => verifyJsonDepth({} as IncomingMessage, response, Buffer.from(json));

  it('refuses a body nested deeper than MAX_JSON_DEPTH, as a 400 the body parser passes on', () => {
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    expect(depth(deep)).toThrow(`the body is nested more than ${MAX_JSON_DEPTH} levels deep`);
    expect(depth('{"a":'.repeat(MAX_JSON_DEPTH) + '[1]' + '}'.repeat(MAX_JSON_DEPTH))).toThrow(/nested more than/);
    try {
      depth(deep)();
    } catch (error) {
      expect(error).toMatchObject({ status: 400, type: 'entity.too.deep', expose: true });
    }
  });

  it('counts only the brackets outside strings, escaped quotes included, and closings bring the depth down', () => {
    expect(depth('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).not.toThrow();
    expect(depth(JSON.stringify({ text: '['.repeat(100) + '{'.repeat(100) }))).not.toThrow();
    expect(depth(JSON.stringify({ text: '"[[[' + '\\'.repeat(3) + '"' + '['.repeat(100) }))).not.toThrow();
    expect(depth(JSON.stringify(Array.from({ length: 100 }, () => [[{ a: [] }]])))).not.toThrow();
    // An escaped backslash ends before the quote: the string closes there, and the brackets after it count.
    expect(depth('["\\\\",' + '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH) + ']')).toThrow(/nested more than/);
    expect(depth('["\\"' + '['.repeat(MAX_JSON_DEPTH) + '"]')).not.toThrow();
  });
});

describe('isDotSegment', () => {
  it('is true of a value that is or holds a "." or ".." segment, only', () => {
    for (const value of ['.', '..', 'a/.', '../a', 'a/../b']) expect(isDotSegment(value), value).toBe(true);
    for (const value of ['a', '...', '.a', 'a.', 'a..b', 'a/b.c/..d']) expect(isDotSegment(value), value).toBe(false);
  });
});

describe('answerClientErrorsAsJson', () => {
  type Socket = { writable: boolean; destroy: ReturnType<typeof vi.fn>; end: ReturnType<typeof vi.fn>; _httpMessage?: unknown };
  function clientError(code: string | undefined, socket: Partial<Socket> = {}): Socket {
    const server = new EventEmitter();
    answerClientErrorsAsJson(server as Server);
    const whole: Socket = { writable: true, destroy: vi.fn(), end: vi.fn(), ...socket };
    server.emit('clientError', Object.assign(new Error('parse'), { code }), whole as unknown as Duplex);
    return whole;
  }
  const answerOf = (socket: Socket) => {
    expect(socket.end).toHaveBeenCalledTimes(1);
    const text: string = socket.end.mock.calls[0][0];
    const [headText, body] = text.split('\r\n\r\n');
    return { head: headText.split('\r\n'), body: JSON.parse(body), length: Buffer.byteLength(body) };
  };

  it('answers a request the HTTP parser refused with a JSON 400 and closes the connection', () => {
    const { head: lines, body, length } = answerOf(clientError('HPE_INVALID_METHOD'));
    expect(lines).toEqual([
      'HTTP/1.1 400 Bad Request',
      'content-type: application/json; charset=utf-8',
      `content-length: ${length}`,
      'connection: close',
    ]);
    expect(body).toEqual({ error: { code: 'bad_request', message: 'the request is not well-formed HTTP (HPE_INVALID_METHOD)' } });
    expect(answerOf(clientError(undefined)).body.error.message).toBe('the request is not well-formed HTTP (parse error)');
    expect(answerOf(clientError('HPE_HEADER_OVERFLOW')).body.error.message).toBe('the request head (URL and headers) is larger than the gateway accepts');
  });

  it('destroys a connection reset or no longer writable, answering nothing', () => {
    for (const socket of [clientError('ECONNRESET'), clientError('HPE_INVALID_METHOD', { writable: false })]) {
      expect(socket.destroy).toHaveBeenCalledTimes(1);
      expect(socket.end).not.toHaveBeenCalled();
    }
  });

  it('leaves a request in flight its own answer, closing the connection after it', () => {
    const inFlight = Object.assign(new EventEmitter(), { headersSent: false, shouldKeepAlive: true });
    const socket = clientError('HPE_INVALID_METHOD', { _httpMessage: inFlight });
    expect(inFlight.shouldKeepAlive).toBe(false);
    expect(socket.end).not.toHaveBeenCalled();
    expect(socket.destroy).not.toHaveBeenCalled();
    inFlight.emit('close');
    expect(socket.end).toHaveBeenCalledTimes(1);
    expect(socket.end.mock.calls[0]).toEqual([]);

    const sent = Object.assign(new EventEmitter(), { headersSent: true, shouldKeepAlive: true });
    clientError('HPE_INVALID_METHOD', { _httpMessage: sent });
    expect(sent.shouldKeepAlive).toBe(true);
  });
});
