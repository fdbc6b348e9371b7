import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { InputId, STREAM_ID_PATTERN } from '@rudder/contracts';
import { GatewayError } from '../errors/gateway-error';

/**
 * Checks of every request before any route sees it, for what no route's schema can catch
 * well: the shape of the URL, the body's media type and nesting, keys that mean something
 * to JavaScript, and the request headers the API defines. Each refusal is a 400
 * `bad_request` through the one exception filter; none of them reaches a handler, so none
 * can enqueue anything. Route schemas still check everything else (`http/edge.ts`).
 */

/** Longest URL accepted (path and query); ids and keys are 200 characters at most, so this is plenty. */
export const MAX_URL_CHARS = 4096;
/** Deepest nesting of a JSON body; the API's deepest body (`messages: [..]`) has 2 levels. */
export const MAX_JSON_DEPTH = 32;
/** Keys that change an object's prototype or constructor when merged carelessly; refused anywhere in a body. */
const POLLUTING_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

type Next = (error?: unknown) => void;
type Request = IncomingMessage & { body?: unknown };

/**
 * The URL, the headers and the media type, before the body is read. A path segment
 * (decoded, so `%2F` inside a key counts) may not be or hold a `.` or `..` segment: they
 * pass the key alphabet but mean "here" and "up" to every URL resolver between the gateway
 * and the companion, so `..` as a turn id would read another resource.
 */
export function checkRequestHead(request: Request, _response: ServerResponse, next: Next): void {
  try {
    // Stryker disable next-line StringLiteral: Node gives every request a URL; "/" and "" have the same (empty) segments, so the fallback decides nothing.
    const url = request.url ?? '/';
    if (url.length > MAX_URL_CHARS) throw new GatewayError('bad_request', `the URL has ${url.length} characters; at most ${MAX_URL_CHARS} are accepted`);
    const path = url.split('?', 1)[0];
    for (const raw of path.split('/')) checkSegment(raw);
    checkHeaders(request);
    const method = request.method ?? 'GET';
    if (hasBody(request) && (method === 'GET' || method === 'HEAD' || method === 'DELETE')) {
      throw new GatewayError('bad_request', `${method} takes no body; send it without one`);
    }
    if (hasBody(request) && !isJson(request.headers['content-type'])) {
      throw new GatewayError('bad_request', 'send the body as JSON with Content-Type: application/json');
    }
    next();
  } catch (error) {
    next(error);
  }
}

/** After the JSON parser: no prototype-polluting key anywhere in the body. */
export function checkParsedBody(request: Request, _response: ServerResponse, next: Next): void {
  try {
    const key = pollutingKeyIn(request.body);
    if (key !== undefined) throw new GatewayError('bad_request', `the body holds the key "${key}", which is never accepted`, { key });
    next();
  } catch (error) {
    next(error);
  }
}

/**
 * The JSON parser's `verify`: refuses a body nested deeper than MAX_JSON_DEPTH before it is
 * parsed (a linear scan of the bytes, outside strings), so a body of a million `[` costs a
 * scan, not a parse. Thrown with a 400 status, the body parser passes it on as is.
 */
export function verifyJsonDepth(_request: IncomingMessage, _response: ServerResponse, body: Buffer): void {
  let depth = 0;
  let inString = false;
  // Stryker disable next-line EqualityOperator: `<=` reads one byte past the end, undefined, which no branch counts.
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === 0x5c) i++; // backslash: skip the escaped byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) {
        throw Object.assign(new Error(`the body is nested more than ${MAX_JSON_DEPTH} levels deep`), { status: 400, type: 'entity.too.deep', expose: true });
      }
    } else if (byte === 0x7d || byte === 0x5d) depth--;
  }
}

/**
 * A request the HTTP parser itself refuses (a head over Node's 16 KB, a malformed request
 * line, a bad header) never reaches Express: answer it as JSON too, instead of Node's bare
 * `400 Bad Request`, and close the connection (its framing cannot be trusted).
 *
 * Unless an earlier request on the same connection is still being answered: then the bytes
 * the parser refused came after a complete request (a DELETE or GET sent without framing
 * but followed by "its body", say), that request is valid and is being handled, and a 400
 * written now would reach the client first, read as the answer to that request while its
 * write goes through. HTTP answers requests in order: the request in flight keeps its own
 * answer, sent with `Connection: close`, and the connection ends after it; the refused bytes
 * get no answer of their own (nothing was read that could be answered).
 */
export function answerClientErrorsAsJson(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (inFlight) {
      if (!inFlight.headersSent) inFlight.shouldKeepAlive = false;
      inFlight.once('close', () => socket.end());
      return;
    }
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'the request head (URL and headers) is larger than the gateway accepts'
        : `the request is not well-formed HTTP (${error.code ?? 'parse error'})`;
    const body = JSON.stringify({ error: { code: 'bad_request', message } });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}

function checkSegment(raw: string): void {
  let segment: string;
  try {
    segment = decodeURIComponent(raw);
  } catch {
    throw new GatewayError('bad_request', 'the path holds a malformed percent-encoding');
  }
  if (/[\p{Cc}]/u.test(segment)) throw new GatewayError('bad_request', 'the path holds a control character (NUL, say)');
  if (segment.split('/').some((part) => part === '.' || part === '..')) {
    throw new GatewayError('bad_request', 'a key or id in the path may not be or hold a "." or ".." segment');
  }
}

/** Headers the API defines are checked on every route, used there or not, so a bad one is never silently ignored. */
function checkHeaders(request: Request): void {
  const idempotencyKey = request.headers['idempotency-key'];
  if (idempotencyKey !== undefined) {
    const parsed = InputId.safeParse(idempotencyKey);
    if (!parsed.success) throw new GatewayError('bad_request', `bad Idempotency-Key header: ${parsed.error.issues[0].message}`);
    if (isDotSegment(parsed.data)) throw new GatewayError('bad_request', 'bad Idempotency-Key header: an id may not be or hold a "." or ".." segment');
  }
  const lastEventId = request.headers['last-event-id'];
  if (lastEventId !== undefined && (typeof lastEventId !== 'string' || !STREAM_ID_PATTERN.test(lastEventId))) {
    throw new GatewayError('bad_request', 'bad Last-Event-ID header: the id of an event received (a position, or <position>.<offset> for a token)');
  }
}

export const isDotSegment = (value: string): boolean => value.split('/').some((part) => part === '.' || part === '..');

function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** `application/json`, with no parameter but `charset=utf-8` (the body parser reads nothing else). */
function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const [type, ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  return type === 'application/json' && parameters.every((parameter) => parameter === '' || parameter === 'charset=utf-8' || parameter === 'charset="utf-8"');
}

/**
 * The first polluting key in a parsed JSON value, depth first; iterative (the depth is bounded
 * already, this is belt and braces). Items are pushed one by one: a spread (`push(...array)`)
 * passes every item as an argument, and an array of a few hundred thousand items (well within
 * the body limit) overflows the call stack (`RangeError`, which was a 500).
 */
function pollutingKeyIn(value: unknown): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (next === null || typeof next !== 'object') continue;
    // Stryker disable next-line ConditionalExpression,BlockStatement: the fast path for arrays; without it an array goes the object way, whose keys are its indices, never a polluting name: the same verdict.
    if (Array.isArray(next)) {
      for (const item of next) stack.push(item);
      continue;
    }
    for (const key of Object.keys(next)) {
      if (POLLUTING_KEYS.has(key)) return key;
      stack.push((next as Record<string, unknown>)[key]);
    }
  }
  return undefined;
}
