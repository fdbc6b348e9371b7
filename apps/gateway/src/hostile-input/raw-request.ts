import { request as httpRequest } from 'node:http';

export type RawAnswer = { status: number; contentType: string | undefined; text: string; json: any };

/**
 * One HTTP request exactly as given: no path normalization (`fetch` resolves `..`), any
 * header, any body bytes. A server that answers before the body is sent (a 413, say) is
 * answered with what it said; the rest of the body is dropped.
 *
 * A body is always framed: given neither Content-Length nor Transfer-Encoding, it is sent
 * chunked. (Node's client chunks by default only for methods that usually carry a body; on
 * GET, HEAD or DELETE it writes the bytes unframed after the head, which the server rightly
 * reads as a body-less request followed by a second, malformed one — not the request meant.)
 */
export function rawRequest(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const headers = { ...options.headers };
  const framed = Object.keys(headers).some((name) => ['content-length', 'transfer-encoding'].includes(name.toLowerCase()));
  if (options.body !== undefined && !framed) headers['transfer-encoding'] = 'chunked';
  return new Promise((resolve, reject) => {
    const request = httpRequest({ hostname, port, method: options.method ?? 'GET', path: options.path, headers, timeout: 15_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: response.statusCode ?? 0, contentType: response.headers['content-type'], text, json });
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer to ${options.method ?? 'GET'} ${options.path.slice(0, 80)}`)));
    // Writing may fail once the server has answered and closed: its answer still counts.
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}
