import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Addresses that keep the companion's API on this machine: no token is needed there (one set is still checked). */
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
/** Routes that carry no conversation data, open without the token (a health probe, Prometheus). */
const OPEN_PATHS = new Set(['/healthz', '/metrics']);
/** Shortest service token accepted: a guessable one would guard nothing. */
export const MIN_TOKEN_CHARS = 16;

export const isLoopback = (host: string): boolean => LOOPBACK.has(host) || /^127(\.\d{1,3}){3}$/.test(host);

/**
 * Where the companion's internal API may listen, checked before anything starts: on loopback
 * (the default, COMPANION_HOST unset) anything goes; bound anywhere else (`0.0.0.0`, a
 * container's interface) every conversation would be served to whoever reaches the port, so
 * a shared service token (COMPANION_TOKEN) is required, and the companion refuses to start
 * without one.
 */
export function checkBinding(host: string, token: string | undefined): void {
  if (token !== undefined && token.length < MIN_TOKEN_CHARS) {
    throw new Error(`COMPANION_TOKEN has ${token.length} characters; use at least ${MIN_TOKEN_CHARS} (a random string, the same for the companion and every gateway)`);
  }
  if (!isLoopback(host) && token === undefined) {
    throw new Error(
      `COMPANION_HOST=${host} serves the companion's internal API (every conversation) beyond this machine: ` +
        'set COMPANION_TOKEN (at least 16 characters, the same on the companion and every gateway), or leave COMPANION_HOST unset to listen on 127.0.0.1',
    );
  }
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Express middleware: with a service token set, every request but OPEN_PATHS must carry
 * `authorization: Bearer <token>`: none is 401, another is 403, compared in constant time
 * (digests of equal length, `timingSafeEqual`). Without a token (loopback only) it lets all through.
 */
export function requireServiceToken(token: string | undefined) {
  const expected = token === undefined ? undefined : digest(token);
  return (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    if (expected === undefined || OPEN_PATHS.has((request.url ?? '/').split('?', 1)[0])) return next();
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer (.+)$/.exec(header) : null;
    if (match === null) return refuse(response, 401, 'unauthorized', 'the companion answers the gateway only: send authorization: Bearer <COMPANION_TOKEN>');
    if (!timingSafeEqual(digest(match[1]), expected)) return refuse(response, 403, 'forbidden', 'the service token does not match COMPANION_TOKEN');
    next();
  };
}

function refuse(response: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}) });
  response.end(body);
}
