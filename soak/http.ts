import type { ConversationEvent, ConversationStatus, SteerAnswer, TranscriptItem, TranscriptPage, TurnView } from '@rudder/contracts';
import { sseMessages } from '../test/sse';

/** An HTTP answer; `status` 0 when there was none (connection refused, reset, or our timeout). */
export type Reply<T> = { status: number; body: T | undefined; error?: { code: string; message: string; details?: unknown }; failure?: string };

/**
 * The soak's view of the public HTTP API: every request has a timeout, nothing throws.
 * Loopback only: the gateway this process started.
 */
export function createSoakClient(baseUrl: string) {
  const path = (key: string, rest = '') => `${baseUrl}/v1/conversations/${encodeURIComponent(key)}${rest}`;
  const call = async <T>(url: string, init: RequestInit, timeoutMs: number): Promise<Reply<T>> => {
    try {
      const response = await fetch(url, {
        ...init,
        headers: { 'content-type': 'application/json', ...init.headers },
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await response.text();
      const body = text ? (JSON.parse(text) as T & { error?: Reply<T>['error'] }) : undefined;
      return response.ok ? { status: response.status, body } : { status: response.status, body: undefined, error: body?.error };
    } catch (error) {
      return { status: 0, body: undefined, failure: String(error) };
    }
  };
  const post = <T>(url: string, body: unknown, timeoutMs: number) => call<T>(url, { method: 'POST', body: JSON.stringify(body) }, timeoutMs);

  return {
    /** Waits for the worker's decision (since the gateway answers chats once decided); 503 after the gateway's 30 s. */
    chat: (key: string, id: string, text: string) => post<{ id: string; position: number }>(path(key, '/chat'), { id, text }, 45_000),
    /** Waits for the worker's decision; the gateway answers 503 after its own 30 s. */
    steer: (key: string, id: string, text: string) => post<SteerAnswer>(path(key, '/steer'), { id, text }, 45_000),
    status: (key: string) => call<ConversationStatus>(path(key), {}, 10_000),
    turnOf: (key: string, input: string) => call<TurnView>(path(key, `/turns?input=${encodeURIComponent(input)}`), {}, 10_000),
    turn: (key: string, turn: string) => call<TurnView>(path(key, `/turns/${encodeURIComponent(turn)}`), {}, 10_000),

    /** The whole transcript, page by page (at most `maxPages` of 200). */
    async transcript(key: string, maxPages = 200): Promise<TranscriptItem[]> {
      const items: TranscriptItem[] = [];
      let after: string | null = null;
      for (let page = 0; page < maxPages; page++) {
        const query: string = `?limit=200${after ? `&after=${encodeURIComponent(after)}` : ''}`;
        const answer: Reply<TranscriptPage> = await call<TranscriptPage>(path(key, `/messages${query}`), {}, 10_000);
        if (!answer.body) throw new Error(`GET messages of ${key}: ${answer.status} ${answer.failure ?? JSON.stringify(answer.error)}`);
        items.push(...answer.body.items);
        if (answer.body.next === null) return items;
        after = answer.body.next;
      }
      throw new Error(`the transcript of ${key} has more than ${maxPages} pages`);
    },

    /**
     * The SSE stream from `Last-Event-ID: <after>`: the replay, read until the stream has been
     * quiet for `quietMs` (it is live after the replay, so it never ends by itself), at most `maxMs`.
     */
    async replay(key: string, after = 0, options: { quietMs?: number; maxMs?: number } = {}): Promise<{ id: string | undefined; event: string; data: ConversationEvent }[]> {
      const quietMs = options.quietMs ?? 1500;
      const controller = new AbortController();
      const hardStop = setTimeout(() => controller.abort(), options.maxMs ?? 30_000);
      const messages: { id: string | undefined; event: string; data: ConversationEvent }[] = [];
      try {
        const response = await fetch(path(key, '/events'), { headers: { 'last-event-id': String(after) }, signal: controller.signal });
        if (!response.ok || !response.body) throw new Error(`GET events of ${key}: ${response.status}`);
        const reader = sseMessages(response).getReader();
        for (;;) {
          let quiet: NodeJS.Timeout | undefined;
          const read = await Promise.race([
            reader.read(),
            new Promise<'quiet'>((resolve) => (quiet = setTimeout(() => resolve('quiet'), quietMs))),
          ]).finally(() => clearTimeout(quiet));
          if (read === 'quiet' || read.done) break;
          const message = read.value;
          if (message.event !== 'token') messages.push({ id: message.id, event: message.event, data: message.data as ConversationEvent });
        }
        await reader.cancel().catch(() => undefined);
        return messages;
      } finally {
        clearTimeout(hardStop);
        controller.abort();
      }
    },
  };
}
export type SoakClient = ReturnType<typeof createSoakClient>;
