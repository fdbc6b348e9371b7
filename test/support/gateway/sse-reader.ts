import { createSseParser, type SseMessage } from '@rudder/contracts';

export type { SseMessage };

/**
 * A Server-Sent Events reader over a fetch response: `next()` gives the messages as they come
 * (comments skipped); `close()` drops the connection as a client that goes away.
 */
export function sseReader(response: Response) {
  if (!response.body) throw new Error(`no event stream (status ${response.status})`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const ready: SseMessage[] = [];
  const parse = createSseParser();
  // One read in flight at a time, kept across timeouts, so no chunk is ever dropped.
  let pending: ReturnType<typeof reader.read> | null = null;

  const next = async (timeoutMs = 10_000): Promise<SseMessage> => {
    const deadline = Date.now() + timeoutMs;
    while (ready.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no SSE message in time');
      let timer: NodeJS.Timeout | undefined;
      pending ??= reader.read();
      const chunk = await Promise.race([
        pending,
        new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), left))),
      ]).finally(() => clearTimeout(timer));
      if (chunk === 'timeout') throw new Error('no SSE message in time');
      pending = null;
      if (chunk.done) throw new Error('the stream ended');
      ready.push(...parse(decoder.decode(chunk.value, { stream: true })));
    }
    return ready.shift()!;
  };

  /** Resolves with the messages that come within `ms` (none expected, typically). */
  const quietFor = async (ms: number): Promise<SseMessage[]> => {
    const extra: SseMessage[] = [];
    const until = Date.now() + ms;
    for (;;) {
      const left = until - Date.now();
      if (left <= 0) return extra;
      try {
        extra.push(await next(left));
      } catch {
        return extra;
      }
    }
  };

  return { next, quietFor, close: () => reader.cancel().catch(() => undefined) };
}
