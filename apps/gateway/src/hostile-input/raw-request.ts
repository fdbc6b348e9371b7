import { request as httpRequest } from 'node:http';

export type RawAnswer = { status: number; contentType: string | undefined; text: string; json: any };

/**
 * One HTTP request exactly as given: no path normalization (`fetch` resolves `..`), any
 * header, any body bytes. A server that answers before the body is sent (a 413, say) is
 * answered with what it said; the rest of the body is dropped.
 */
export function rawRequest(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ hostname, port, method: options.method ?? 'GET', path: options.path, headers: options.headers, timeout: 15_000 }, (response) => {
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
