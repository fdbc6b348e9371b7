import type { ChatAccepted, SteerAnswer } from '@rudder/contracts';

/**
 * The few calls of the HTTP API the benchmarks make (test/client.ts has them all, but it
 * imports test/stack.ts, which imports vitest).
 */
export function createClient(baseUrl: string) {
  const path = (key: string, rest: string) => `${baseUrl}/v1/conversations/${encodeURIComponent(key)}${rest}`;
  const post = async <T>(url: string, body: unknown): Promise<{ status: number; body: T }> => {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as T };
  };
  return {
    chat: (key: string, body: { text: string; id?: string }) => post<ChatAccepted>(path(key, '/chat'), body),
    steer: (key: string, body: { text: string; id?: string }) => post<SteerAnswer>(path(key, '/steer'), body),
    /** The live event stream of a conversation (no replay). */
    events: (key: string, signal: AbortSignal) => fetch(path(key, '/events'), { signal }),
  };
}
export type Client = ReturnType<typeof createClient>;
