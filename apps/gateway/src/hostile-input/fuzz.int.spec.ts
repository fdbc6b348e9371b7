import { STREAM_ID_PATTERN } from '@rudder/contracts';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';
import { rawRequest } from './raw-request';

/**
 * Property: whatever hostile request reaches the running gateway — random bodies, headers and
 * paths on every route, each request hostile in at least one way chosen at random — the
 * answer is a 4xx with the API's JSON error (never a 5xx, never a hang), nothing reaches
 * agent.inputs, and /healthz is still 200 afterwards.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok=alice', LIMIT_INPUTS_PER_SECOND: '0', LIMIT_STREAMS_PER_SUBJECT: '0' }, { decisionTimeoutMs: 3000 });
});
afterAll(() => h?.stop());

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-';
const fromAlphabet = (min: number, max: number) =>
  fc.array(fc.constantFrom(...ALPHABET), { minLength: min, maxLength: max }).map((chars) => chars.join(''));
const goodKey = fromAlphabet(1, 40).filter((key) => !key.split('/').some((part) => part === '.' || part === '..'));

/** Printable ASCII stays as it is (so `%`, `..` and friends reach the server raw); everything else is percent-encoded. */
const asPathSegment = (text: string) => [...text].map((c) => (/^[\x21-\x7e]$/.test(c) && c !== '?' && c !== '#' ? c : encodeURIComponent(c))).join('');

const hostileKey = fc.oneof(
  fromAlphabet(201, 260).map(encodeURIComponent),
  fc.string({ minLength: 1, maxLength: 30 }).filter((s) => /[^A-Za-z0-9._:/-]/.test(s)).map(asPathSegment),
  fc.constantFrom('..', '.', '%2e%2e', '%2E', 'a%2F..%2Fb', '..%2Fx', 'a%00b', '%00', 'a%ZZ', '%', 'a%2', '%C0%AE%C0%AE', '%u002e'),
  fc.tuple(goodKey, fc.constantFrom('%00', '%0a', '%2F..', '%2F.', '%7F')).map(([key, tail]) => encodeURIComponent(key) + tail),
);
const anyKey = fc.oneof(goodKey.map(encodeURIComponent), hostileKey);

const hostileHeaderValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fromAlphabet(201, 240),
  fc.constantFrom('..', './x', '-1', '1e3', ' 1', '0x10', '9'.repeat(20), ''),
).filter((value) => /^[\x20-\x7e]*$/.test(value) && value === value.trim() && value !== '');
const hostileHeaders = fc.oneof(
  hostileHeaderValue.filter((v) => !/^[A-Za-z0-9._:/-]{1,200}$/.test(v) || v.split('/').some((p) => p === '.' || p === '..')).map((v) => ({ 'idempotency-key': v })),
  hostileHeaderValue.filter((v) => !STREAM_ID_PATTERN.test(v)).map((v) => ({ 'last-event-id': v })),
);
const badAuth = fc.oneof(
  fc.constant(undefined),
  fc.string({ maxLength: 60 }).filter((v) => /^[\x20-\x7e]*$/.test(v) && v.trim() !== 'Bearer tok' && v.trim() !== ''),
  fc.constantFrom('Bearer', 'Bearer tok2', 'Basic dG9rOg==', 'bearer  tok x', 'Bearer a.b.c', 'Bearer eyJhbGciOiJub25lIn0.e30.'),
);

/** A JSON value nested `depth` deep. */
const nested = (depth: number, leaf: string) => '['.repeat(depth) + leaf + ']'.repeat(depth);
const pollute = fc.constantFrom('__proto__', 'constructor', 'prototype');
/** A body no route accepts. */
const hostileBody = fc.oneof(
  fc.string({ maxLength: 80 }).filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
  fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }).map((v) => JSON.stringify(v)),
  fc.oneof(fc.constant(null), fc.double(), fc.boolean(), fc.string({ maxLength: 20 })).map((v) => JSON.stringify(v)),
  fc.tuple(pollute, fc.jsonValue({ maxDepth: 2 }), fc.integer({ min: 0, max: 4 })).map(([key, value, depth]) =>
    `{"text":"hi","x":${nested(depth, `{"${key}":${JSON.stringify(value) ?? 'null'}}`)}}`,
  ),
  fc.integer({ min: 33, max: 5000 }).map((depth) => `{"text":"hi","x":${nested(depth, '1')}}`),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }))
    .map(([key, value]) => JSON.stringify({ text: 'hi', [`x-${key}`]: value })),
  fc.constantFrom('{"text":""}', '{"text":"   "}', '{"text":1}', '{"messages":[]}', '{"text":"a","messages":["b"]}', '{"discardPending":"yes"}', '{"text":"hi","onBusy":"explode"}', '{"text":"hi","id":""}', '{"text":"hi","id":".."}'),
);
const anyBody = fc.option(fc.oneof(hostileBody, fc.constantFrom('{"text":"hi"}', '{}', '')), { nil: undefined });
const contentTypes = fc.oneof(
  fc.constantFrom('application/json', 'application/json; charset=utf-8'),
  fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/jsonx', 'application/merge-patch+json', 'json'),
);

type Route = { method: string; path: (key: string, id: string) => string };
const routes: Route[] = [
  { method: 'POST', path: (k) => `/v1/conversations/${k}/chat` },
  { method: 'POST', path: (k) => `/v1/conversations/${k}/steer` },
  { method: 'POST', path: (k) => `/v1/conversations/${k}/stop` },
  { method: 'POST', path: (k, id) => `/v1/conversations/${k}/inputs/${id}/promote` },
  { method: 'POST', path: (k) => `/v1/conversations/${k}/stream-tokens` },
  { method: 'DELETE', path: (k, id) => `/v1/conversations/${k}/inputs/${id}` },
  { method: 'PATCH', path: (k, id) => `/v1/conversations/${k}/inputs/${id}` },
  { method: 'POST', path: (k) => `/v1/conversations/${k}/rollback` },
  { method: 'POST', path: (k, id) => `/v1/conversations/${k}/inputs/${id}/move` },
  { method: 'DELETE', path: (k) => `/v1/conversations/${k}/inputs?latest=chat` },
  { method: 'GET', path: (k) => `/v1/conversations/${k}` },
  { method: 'GET', path: (k) => `/v1/conversations/${k}/messages?limit=5` },
  { method: 'GET', path: (k, id) => `/v1/conversations/${k}/turns/${id}` },
  { method: 'GET', path: (k, id) => `/v1/conversations/${k}/turns?input=${id}` },
  { method: 'GET', path: (k) => `/v1/conversations/${k}/events` },
];

/** One request, hostile in the way `hostility` names (at least), random in every other. */
const hostileRequest = fc
  .record({
    route: fc.constantFrom(...routes),
    hostility: fc.constantFrom('key', 'id', 'body', 'contentType', 'header', 'auth'),
    key: anyKey,
    badKey: hostileKey,
    id: fc.oneof(goodKey.map(encodeURIComponent), hostileKey),
    badId: hostileKey,
    body: anyBody,
    badBody: hostileBody,
    contentType: fc.option(contentTypes, { nil: undefined }),
    badContentType: fc.constantFrom('text/plain', 'application/xml', 'application/json; charset=latin1', 'image/png'),
    headers: fc.option(hostileHeaders, { nil: undefined }),
    badHeaders: hostileHeaders,
    auth: fc.oneof(fc.constant('Bearer tok'), badAuth),
    badAuth,
    chunked: fc.boolean(),
  })
  .map((r) => {
    const idRoute = r.route.path('K', 'ID').includes('ID');
    // An `id` hostility on a route without one would be no hostility at all: use the key instead.
    const hostility = r.hostility === 'id' && !idRoute ? 'key' : r.hostility;
    const key = hostility === 'key' ? r.badKey : r.key;
    const id = hostility === 'id' ? r.badId : r.id;
    const body = hostility === 'body' || hostility === 'contentType' ? r.badBody.length > 0 ? r.badBody : '{"x":1}' : r.body;
    const contentType = hostility === 'contentType' ? r.badContentType : hostility === 'body' ? 'application/json' : r.contentType;
    const headers: Record<string, string> = {
      ...(hostility === 'header' ? r.badHeaders : r.headers),
      ...(contentType === undefined ? {} : { 'content-type': contentType }),
    };
    const authorization = hostility === 'auth' ? r.badAuth : r.auth;
    if (authorization !== undefined) headers.authorization = authorization;
    if (body !== undefined && !r.chunked) headers['content-length'] = String(Buffer.byteLength(body));
    return { method: r.route.method, path: r.route.path(key, id), headers, body, hostility };
  });

/**
 * Bodies of hostile *shape*, each well-formed JSON within the body limit or just past it: wide
 * arrays (300,000 elements), many keys, huge keys, deep nesting, at the top or inside a field.
 * Built as text (a generated value of this size would cost fast-check more than the gateway).
 */
const repeated = (count: number, item: string) => Array.from({ length: count }, () => item).join(',');
const wideShape = fc.oneof(
  fc.record({ count: fc.integer({ min: 1000, max: 300_000 }), item: fc.constantFrom('1', '"a"', 'null', '{}', '[]', '{"text":"hi"}') }).map(({ count, item }) => `[${repeated(count, item)}]`),
  fc.integer({ min: 1000, max: 200_000 }).map((count) => `{"messages":[${repeated(count, '1')}]}`),
  fc.integer({ min: 1000, max: 200_000 }).map((count) => `{"text":"hi","x":[${repeated(count, '[1]')}]}`),
  fc.integer({ min: 1000, max: 60_000 }).map((count) => `{${Array.from({ length: count }, (_, i) => `"k${i}":${i}`).join(',')}}`),
  fc.integer({ min: 1000, max: 60_000 }).map((count) => `{"text":"hi","x":{${Array.from({ length: count }, (_, i) => `"k${i}":[]`).join(',')}}}`),
  fc.tuple(fc.integer({ min: 10_000, max: 900_000 }), fc.constantFrom('{"%":1}', '{"text":"hi","%":1}', '[{"%":{"%":1}}]')).map(([length, shape]) => shape.replaceAll('%', 'k'.repeat(length))),
  fc.tuple(fc.integer({ min: 1, max: 32 }), fc.integer({ min: 1000, max: 100_000 })).map(([depth, count]) => nested(depth, repeated(count, '0'))),
  fc.integer({ min: 33, max: 200_000 }).map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)),
);
const shapeRoute = fc.constantFrom(...routes.filter((route) => route.method === 'POST' || route.method === 'PATCH'));

describe('the gateway under bodies of hostile shape', () => {
  it('answers every one with a 4xx JSON error, with a token or without, and enqueues nothing', async () => {
    const seen = new Map<number, number>();
    const produced = await h.producedDuring(async () => {
      await fc.assert(
        fc.asyncProperty(shapeRoute, wideShape, fc.boolean(), async (route, body, authorized) => {
          const path = route.path('fuzz-shape', 'some-id');
          const headers: Record<string, string> = { 'content-type': 'application/json', ...(authorized ? { authorization: 'Bearer tok' } : {}) };
          const answer = await rawRequest(h.gateway.url, { method: route.method, path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body });
          seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1);
          const what = `${route.method} ${path} with ${body.length} bytes (${body.slice(0, 40)}…) → ${answer.text.slice(0, 200)}`;
          expect(answer.status, what).toBeGreaterThanOrEqual(400);
          expect(answer.status, what).toBeLessThan(500);
          expect(answer.contentType, what).toMatch(/^application\/json/);
          expect(answer.json, what).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
          // A refusal names what is wrong; it does not echo a million issues back.
          expect(answer.text.length, what).toBeLessThan(20_000);
        }),
        { numRuns: 80, interruptAfterTimeLimit: 40_000 },
      );
    });
    expect(produced).toEqual([]);
    expect((await h.call('/healthz')).status).toBe(200);
    process.stderr.write(`[fuzz shapes] statuses: ${JSON.stringify(Object.fromEntries(seen))}\n`);
  }, 90_000);

  it('a top-level JSON array of 300,000 elements is 400 with a token and 401 without (it was a RangeError, 500)', async () => {
    const body = `[${repeated(300_000, '1')}]`;
    const send = (headers: Record<string, string>) =>
      rawRequest(h.gateway.url, { method: 'POST', path: '/v1/conversations/fuzz-wide/chat', headers: { 'content-type': 'application/json', 'content-length': String(body.length), ...headers }, body });
    const withToken = await send({ authorization: 'Bearer tok' });
    expect({ status: withToken.status, code: withToken.json?.error?.code }, withToken.text.slice(0, 200)).toEqual({ status: 400, code: 'bad_request' });
    const without = await send({});
    expect({ status: without.status, code: without.json?.error?.code }, without.text.slice(0, 200)).toEqual({ status: 401, code: 'unauthorized' });
  });
});

describe('the gateway under random hostile requests', () => {
  it('answers every one with a 4xx JSON error, enqueues nothing, and stays healthy', async () => {
    const seen = new Map<number, number>();
    const produced = await h.producedDuring(async () => {
      await fc.assert(
        fc.asyncProperty(hostileRequest, async (request) => {
          const answer = await rawRequest(h.gateway.url, request);
          seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1);
          expect(answer.status, `${request.method} ${request.path} → ${answer.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
          expect(answer.status, `${request.method} ${request.path} → ${answer.text.slice(0, 200)}`).toBeLessThan(500);
          expect(answer.contentType).toMatch(/^application\/json/);
          expect(answer.json).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
        }),
        { numRuns: 400, interruptAfterTimeLimit: 40_000 },
      );
    });
    expect(produced).toEqual([]);
    expect((await h.call('/healthz')).status).toBe(200);
    process.stderr.write(`[fuzz] statuses: ${JSON.stringify(Object.fromEntries(seen))}\n`);
  }, 90_000);
});
