import { sseMessages, type SseMessage } from '../../sse';

export type { SseMessage };

/**
 * A Server-Sent Events reader over a fetch response: `next()` gives the messages as they come
 * (comments skipped); `close()` drops the connection as a client that goes away.
 */
export function sseReader(response: Response) {
  const reader = sseMessages(response).getReader();
  // One read in flight at a time, kept across timeouts, so no message is ever dropped.
  let pending: ReturnType<typeof reader.read> | null = null;

  const next = async (timeoutMs = 10_000): Promise<SseMessage> => {
    let timer: NodeJS.Timeout | undefined;
    pending ??= reader.read();
    const read = await Promise.race([
      pending,
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    if (read === 'timeout') throw new Error('no SSE message in time');
    pending = null;
    if (read.done) throw new Error('the stream ended');
    return read.value;
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
