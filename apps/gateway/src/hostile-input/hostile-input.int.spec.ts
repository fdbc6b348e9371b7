import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Harness } from '../../../../test/support/gateway/harness';
import { rawRequest, type RawAnswer } from './raw-request';

/**
 * Hostile input at the running gateway, case by case: each answer is a 4xx with the API's
 * JSON error, and nothing reaches agent.inputs. (fuzz.int.spec.ts drives random ones.)
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok=alice', LIMIT_INPUTS_PER_SECOND: '0' }, { decisionTimeoutMs: 3000 });
});
afterAll(() => h?.stop());

const auth = { authorization: 'Bearer tok' };
const json = { ...auth, 'content-type': 'application/json' };
const chat = '/v1/conversations/hostile/chat';

async function expectRefused(answer: RawAnswer, status: number, message?: RegExp) {
  expect({ status: answer.status, contentType: answer.contentType }, answer.text.slice(0, 300)).toEqual({ status, contentType: expect.stringMatching(/^application\/json/) });
  expect(answer.json).toEqual({ error: { code: expect.any(String), message: expect.any(String), ...(answer.json?.error?.details === undefined ? {} : { details: answer.json.error.details }) } });
  if (message) expect(answer.json.error.message).toMatch(message);
}
/** Writes `bytes` on one connection as they are and returns all the connection answered, once the gateway closed it (or 10 s passed). */
function onOneConnection(bytes: string): Promise<string> {
  const { hostname, port } = new URL(h.gateway.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
const send = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}) =>
  rawRequest(h.gateway.url, { method: init.method ?? (init.body === undefined ? 'GET' : 'POST'), path, headers: init.headers ?? auth, body: init.body });

describe('hostile input', () => {
  it('bodies: not JSON, the wrong media type, arrays, null, scalars, deep nesting, polluting keys, 10 MB', async () => {
    const produced = await h.producedDuring(async () => {
      const cases: [string, Parameters<typeof send>[1], number, RegExp?][] = [
        ['not JSON', { body: '{"text": "hi"', headers: json }, 400, /not a JSON object/],
        ['JSON as text/plain', { body: '{"text":"hi"}', headers: { ...auth, 'content-type': 'text/plain' } }, 400, /Content-Type: application\/json/],
        ['JSON without a media type', { body: '{"text":"hi"}', headers: auth }, 400, /Content-Type/],
        ['a form', { body: 'text=hi', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' } }, 400],
        ['JSON in another charset', { body: '{"text":"hi"}', headers: { ...auth, 'content-type': 'application/json; charset=latin1' } }, 400],
        ['an array', { body: '[{"text":"hi"}]', headers: json }, 400],
        ['null', { body: 'null', headers: json }, 400, /not a JSON object/],
        ['a number', { body: '42', headers: json }, 400, /not a JSON object/],
        ['a string', { body: '"hi"', headers: json }, 400],
        ['nested 10 000 deep', { body: '{"text":"hi","x":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}', headers: json }, 400, /nested more than 32/],
        ['__proto__', { body: '{"text":"hi","__proto__":{"admin":true}}', headers: json }, 400, /__proto__/],
        ['a nested constructor', { body: '{"text":"hi","x":[{"constructor":{"prototype":{}}}]}', headers: json }, 400, /constructor/],
        ['a gzip body that is not gzip', { body: '{"text":"hi"}', headers: { ...json, 'content-encoding': 'gzip' } }, 400],
        ['10 MB', { body: Buffer.alloc(10 * 1024 * 1024, 'a'), headers: json }, 413, /larger than the gateway accepts/],
        ['10 MB of valid JSON', { body: JSON.stringify({ text: 'x'.repeat(10 * 1024 * 1024) }), headers: json }, 413],
      ];
      for (const [name, init, status, message] of cases) {
        const answer = await send(chat, init);
        await expectRefused(answer, status, message);
        expect(answer.status, name).toBe(status);
      }
      for (const route of ['/steer', '/stop', '/inputs/i-1/promote', '/stream-tokens']) {
        await expectRefused(await send(`/v1/conversations/hostile${route}`, { body: '[]', headers: json }), 400);
        await expectRefused(await send(`/v1/conversations/hostile${route}`, { body: '{"__proto__":{}}', headers: json }), 400);
        await expectRefused(await send(`/v1/conversations/hostile${route}`, { body: '{}', headers: { ...auth, 'content-type': 'text/plain' } }), 400);
      }
      expect(Object.prototype).not.toHaveProperty('admin');
    });
    expect(produced).toEqual([]);
  });

  it('an approval decision: NUL and lone surrogates, over-long reasons and arguments, a 300,000-element array, wrong types, unknown fields', async () => {
    const approvals = '/v1/conversations/hostile/approvals/appr_1';
    const produced = await h.producedDuring(async () => {
      const cases: [string, string, number][] = [
        ['NUL in the reason', '{"decision":"deny","reason":"a\\u0000b"}', 400],
        ['a lone surrogate in the reason', '{"decision":"deny","reason":"a\\ud800b"}', 400],
        ['a reason of 2,001 characters', JSON.stringify({ decision: 'deny', reason: 'r'.repeat(2001) }), 400],
        ['a decision of another kind', '{"decision":"maybe"}', 400],
        ['a decision of another type', '{"decision":true}', 400],
        ['no decision', '{"reason":"x"}', 400],
        ['arguments as an array', '{"decision":"approve","arguments":[1,2]}', 400],
        ['arguments as a string', '{"decision":"approve","arguments":"{}"}', 400],
        ['a 300,000-element array in the arguments', JSON.stringify({ decision: 'approve', arguments: { to: Array.from({ length: 300_000 }, () => 1) } }), 413],
        ['an unknown field', '{"decision":"approve","admin":true}', 400],
      ];
      for (const [name, body, status] of cases) {
        const answer = await send(approvals, { body, headers: json });
        expect(answer.status, name).toBe(status);
        await expectRefused(answer, status);
      }
    });
    expect(produced).toEqual([]);
  });

  it('an edit: NUL and lone surrogates, empty text, unknown fields, text and messages together, wrong types, a 300,000-element array, polluting keys', async () => {
    const edit = '/v1/conversations/hostile/inputs/i-1';
    const produced = await h.producedDuring(async () => {
      const cases: [string, string, number][] = [
        ['NUL in the text', '{"text":"a\\u0000b"}', 400],
        ['a lone surrogate in a message', '{"messages":["ok","a\\ud800b"]}', 400],
        ['empty text', '{"text":""}', 400],
        ['blank text', '{"text":" \\n\\t "}', 400],
        ['an empty message', '{"messages":["ok",""]}', 400],
        ['an unknown field', '{"text":"hi","kind":"steer"}', 400],
        ['text and messages', '{"text":"hi","messages":["hi"]}', 400],
        ['neither', '{"id":"e-1"}', 400],
        ['text of another type', '{"text":42}', 400],
        ['a revision of another type', '{"text":"hi","ifRevision":"0"}', 400],
        ['a revision that is no integer', '{"text":"hi","ifRevision":1.5}', 400],
        ['33 messages', JSON.stringify({ messages: Array.from({ length: 33 }, () => 'm') }), 400],
        ['a 300,000-element array', JSON.stringify({ messages: Array.from({ length: 300_000 }, () => 'm') }), 413],
        ['__proto__', '{"text":"hi","__proto__":{"admin":true}}', 400],
        ['an array', '[{"text":"hi"}]', 400],
      ];
      for (const [name, body, status] of cases) {
        const answer = await send(edit, { method: 'PATCH', body, headers: json });
        expect(answer.status, name).toBe(status);
        await expectRefused(answer, status);
      }
      await expectRefused(await send(edit, { method: 'PATCH', body: '{"text":"hi"}', headers: { ...auth, 'content-type': 'text/plain' } }), 400);
      await expectRefused(await send(edit, { method: 'PATCH', headers: auth }), 400);
      expect(Object.prototype).not.toHaveProperty('admin');
    });
    expect(produced).toEqual([]);
  });

  it('a rollback: neither or both of turns and toTurn, turns out of range or of another type, NUL in a turn id, unknown fields, a huge array, polluting keys', async () => {
    const rollback = '/v1/conversations/hostile/rollback';
    const produced = await h.producedDuring(async () => {
      const cases: [string, string, number][] = [
        ['neither', '{"ifLastTurn":"t-1"}', 400],
        ['both', '{"turns":1,"toTurn":"t-1"}', 400],
        ['no turns', '{"turns":0}', 400],
        ['too many turns', '{"turns":17}', 400],
        ['negative turns', '{"turns":-1}', 400],
        ['turns that are no integer', '{"turns":1.5}', 400],
        ['turns of another type', '{"turns":"1"}', 400],
        ['an empty toTurn', '{"toTurn":""}', 400],
        ['NUL in toTurn', '{"toTurn":"a\\u0000b"}', 400],
        ['a lone surrogate in ifLastTurn', '{"turns":1,"ifLastTurn":"a\\ud800b"}', 400],
        ['a 201-character toTurn', JSON.stringify({ toTurn: 't'.repeat(201) }), 400],
        ['stopRunning of another type', '{"turns":1,"stopRunning":1}', 400],
        ['an unknown field', '{"turns":1,"discardPending":true}', 400],
        ['a 300,000-element array', JSON.stringify({ turns: 1, toTurn: Array.from({ length: 300_000 }, () => 't') }), 413],
        ['__proto__', '{"turns":1,"__proto__":{"admin":true}}', 400],
        ['an array', '[{"turns":1}]', 400],
      ];
      for (const [name, body, status] of cases) {
        const answer = await send(rollback, { method: 'POST', body, headers: json });
        expect(answer.status, name).toBe(status);
        await expectRefused(answer, status);
      }
      await expectRefused(await send(rollback, { method: 'POST', body: '{"turns":1}', headers: { ...auth, 'content-type': 'text/plain' } }), 400);
      await expectRefused(await send(rollback, { method: 'POST', headers: auth }), 400);
      expect(Object.prototype).not.toHaveProperty('admin');
    });
    expect(produced).toEqual([]);
  });

  it('a move: no before, before of another type or not an input id, NUL in it, before itself, unknown fields, a huge array, polluting keys', async () => {
    const move = '/v1/conversations/hostile/inputs/q-1/move';
    const produced = await h.producedDuring(async () => {
      const cases: [string, string, number][] = [
        ['no before', '{}', 400],
        ['before of another type', '{"before":1}', 400],
        ['an empty before', '{"before":""}', 400],
        ['NUL in before', '{"before":"a\\u0000b"}', 400],
        ['a lone surrogate in before', '{"before":"a\\ud800b"}', 400],
        ['a dot segment as before', '{"before":".."}', 400],
        ['a 201-character before', JSON.stringify({ before: 'q'.repeat(201) }), 400],
        ['before itself', '{"before":"q-1"}', 400],
        ['an unknown field', '{"before":null,"after":"q-2"}', 400],
        ['a 300,000-element array', JSON.stringify({ before: Array.from({ length: 300_000 }, () => 'q') }), 413],
        ['__proto__', '{"before":null,"__proto__":{"admin":true}}', 400],
        ['an array', '[{"before":null}]', 400],
      ];
      for (const [name, body, status] of cases) {
        const answer = await send(move, { method: 'POST', body, headers: json });
        expect(answer.status, name).toBe(status);
        await expectRefused(answer, status);
      }
      await expectRefused(await send(move, { method: 'POST', body: '{"before":null}', headers: { ...auth, 'content-type': 'text/plain' } }), 400);
      await expectRefused(await send(move, { method: 'POST', headers: auth }), 400);
      expect(Object.prototype).not.toHaveProperty('admin');
    });
    expect(produced).toEqual([]);
  });

  it('paths: over-long keys and ids, dot segments, encoded slashes around dots, NUL, bad percent-encoding, a huge URL', async () => {
    const produced = await h.producedDuring(async () => {
      const paths: [string, string, number][] = [
        ['POST', `/v1/conversations/${'k'.repeat(201)}/chat`, 400],
        ['POST', '/v1/conversations/../chat', 400],
        ['POST', '/v1/conversations/..%2Fadmin/chat', 400],
        ['POST', '/v1/conversations/a%2F..%2Fb/chat', 400],
        ['POST', '/v1/conversations/%2e%2e/chat', 400],
        ['POST', '/v1/conversations/./chat', 400],
        ['POST', '/v1/conversations/a%00b/chat', 400],
        ['POST', '/v1/conversations/a%ZZ/chat', 400],
        ['POST', '/v1/conversations/a%2/chat', 400],
        ['GET', '/v1/conversations/k/turns/..', 400],
        ['GET', '/v1/conversations/k/turns/%2E%2E', 400],
        ['GET', `/v1/conversations/k/turns/${'t'.repeat(201)}`, 400],
        ['DELETE', '/v1/conversations/k/inputs/..', 400],
        ['DELETE', `/v1/conversations/k/inputs/${'i'.repeat(201)}`, 400],
        ['POST', '/v1/conversations/k/inputs/../promote', 400],
        ['POST', `/v1/conversations/k/inputs/${'i'.repeat(201)}/promote`, 400],
        ['PATCH', '/v1/conversations/k/inputs/..', 400],
        ['PATCH', `/v1/conversations/k/inputs/${'i'.repeat(201)}`, 400],
        ['POST', '/v1/conversations/k/approvals/..', 400],
        ['POST', '/v1/conversations/k/approvals/%2E%2E', 400],
        ['POST', `/v1/conversations/k/approvals/${'a'.repeat(201)}`, 400],
        ['GET', `/v1/conversations/k/turns?input=${'i'.repeat(201)}`, 400],
        ['GET', `/v1/conversations/k?${'q'.repeat(5000)}`, 400],
        ['GET', `/v1/conversations/k/messages?${'q='.repeat(10_000)}`, 400],
        ['GET', '/v1/nowhere/../../etc/passwd', 400],
        ['GET', '/v1/no-such-route', 404],
      ];
      for (const [method, path, status] of paths) {
        const answer = await send(path, { method, headers: method === 'GET' || method === 'DELETE' ? auth : json, body: method === 'POST' ? '{"text":"hi"}' : undefined });
        expect({ path: path.slice(0, 100), status: answer.status }).toEqual({ path: path.slice(0, 100), status });
        await expectRefused(answer, status);
      }
      // The Responses door's query, in the forms a client sends `include` (`include[]=…`), bounded as the create's; its errors in the protocol's shape.
      const retrieves = [
        `/v1/responses/resp_x?${'include[]=a&'.repeat(17)}`,
        `/v1/responses/resp_x?include[]=${'i'.repeat(129)}`,
        `/v1/responses/resp_x?include=${'i'.repeat(129)}`,
        '/v1/responses/resp_x?include_obfuscation=maybe',
        '/v1/responses/resp_x?include[x]=a',
      ];
      for (const path of retrieves) {
        const answer = await send(path);
        expect({ path, status: answer.status }).toEqual({ path, status: 400 });
        expect(answer.json).toEqual({ error: { type: 'invalid_request_error', code: expect.any(String), message: expect.any(String), param: expect.toBeOneOf([null, expect.any(String)]) } });
      }
    });
    expect(produced).toEqual([]);
  });

  it('headers: bad Idempotency-Key and Last-Event-ID on every route, bodies with ids that are path tricks, a head over 16 KB', async () => {
    const produced = await h.producedDuring(async () => {
      const bad: Record<string, string>[] = [
        { 'idempotency-key': 'x'.repeat(201) },
        { 'idempotency-key': 'has space' },
        { 'idempotency-key': '..' },
        { 'last-event-id': '-1' },
        { 'last-event-id': 'abc' },
        { 'last-event-id': '9'.repeat(40) },
      ];
      for (const headers of bad) {
        for (const [method, path] of [['POST', '/v1/conversations/k/chat'], ['POST', '/v1/conversations/k/stop'], ['GET', '/v1/conversations/k/events'], ['GET', '/v1/conversations/k']]) {
          await expectRefused(await send(path, { method, headers: { ...json, ...headers }, body: method === 'POST' ? '{"text":"hi"}' : undefined }), 400);
        }
      }
      for (const id of ['..', 'a/../b', './x']) {
        await expectRefused(await send(chat, { body: JSON.stringify({ text: 'hi', id }), headers: json }), 400);
        await expectRefused(await send('/v1/conversations/k/steer', { body: JSON.stringify({ text: 'hi', id }), headers: json }), 400);
      }
      await expectRefused(await send(chat, { body: '{"text":"hi"}', headers: { ...json, 'x-padding': 'p'.repeat(20_000) } }), 400, /request head/);
    });
    expect(produced).toEqual([]);
    expect((await h.call('/healthz')).status).toBe(200);
  });

  it('bytes after a complete request are not its body: its own answer comes first, not a 400 for the bytes after it', async () => {
    // A DELETE without Content-Length or Transfer-Encoding has no body: it ends at its head.
    // What follows ("[]", which Node's own client sends like this for DELETE with a body)
    // is a second, malformed request on the same connection. The DELETE is valid and is
    // handled (its retract is produced); its answer must be its own, sent first: a 400 for
    // the bytes after it, written while the DELETE is still in flight, would be read by the
    // client (or a proxy) as the DELETE's answer while the write went through.
    const key = 'pipelined-junk';
    h.worker = (input) =>
      input.type === 'retract' && input.conversation === key ? [conversationEvent(key, 'retract.refused', { retract: input.id, target: null, code: 'not_found' })] : undefined;
    try {
      const wire = await onOneConnection(`DELETE /v1/conversations/${key}/inputs?latest=chat HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer tok\r\n\r\n[]`);
      const statusLines = wire.match(/^HTTP\/1\.1 \d{3}/gm) ?? [];
      expect(statusLines[0], wire.slice(0, 400)).toBe('HTTP/1.1 404');
      expect(wire).toContain('"code":"not_found"');
      expect(wire).not.toContain('HPE_');
      // …and then the connection ends (its framing is lost): closed by the gateway, not by the 10 s timer.
      expect(wire).toMatch(/^connection: close\r$/im);
      expect(statusLines).toHaveLength(1);
      expect((await h.inputOf(key, 'retract')).target).toEqual({ latest: 'chat' });
    } finally {
      h.worker = undefined;
    }
  });
});
