import type { ErrorBody } from '@rudder/contracts';

/** An answer of the API as sent: the status, the headers, and the JSON body (which carries `error` on failure). */
export type Answer<T = any> = { status: number; body: T & Partial<ErrorBody>; headers: Headers };

/**
 * The HTTP API as it answers, for the specs that assert the SPEC's exact answers — a status
 * code, a header, an error body — or send what a typed client would not (a malformed body, a
 * chat without an id, an `Idempotency-Key`), and for the raw event stream. `@rudder/client`
 * (`Stack.client`) turns each answer into its typed body or a `RudderError`, which would hide
 * them. Routes are the SPEC's, under `/v1/conversations/{key}`; a string body is sent as it is.
 */
export function createHttp(baseUrl: string, token?: string) {
  const url = (key: string, rest: string) => `${baseUrl}/v1/conversations/${encodeURIComponent(key)}${rest}`;
  const auth = (): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});
  const request = async <T>(method: string, key: string, rest: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> => {
    const response = await fetch(url(key, rest), {
      method,
      headers: { 'content-type': 'application/json', ...auth(), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };
  return {
    get: <T = any>(key: string, rest = '', headers?: Record<string, string>) => request<T>('GET', key, rest, undefined, headers),
    post: <T = any>(key: string, rest: string, body?: unknown, headers?: Record<string, string>) => request<T>('POST', key, rest, body, headers),
    put: <T = any>(key: string, rest: string, body?: unknown) => request<T>('PUT', key, rest, body),
    patch: <T = any>(key: string, rest: string, body?: unknown, headers?: Record<string, string>) => request<T>('PATCH', key, rest, body, headers),
    delete: <T = any>(key: string, rest: string, headers?: Record<string, string>) => request<T>('DELETE', key, rest, undefined, headers),
    /** The event stream's response, unread (`readEvents` in sse.ts reads it). */
    events: (key: string, headers: Record<string, string> = {}, signal?: AbortSignal) => fetch(url(key, '/events'), { headers: { ...auth(), ...headers }, signal }),
  };
}
export type Http = ReturnType<typeof createHttp>;
