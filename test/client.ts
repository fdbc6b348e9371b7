import { vi } from 'vitest';
import type { ChatAccepted, ConversationStatus, ErrorBody, GrantAnswer, RetractAnswer, SteerAnswer, StopAnswer, TranscriptPage, TurnView } from '@rudder/contracts';
import { WAIT } from './system';

/** An answer of the API: `body` is T on success, and carries `error` on failure. */
export type Answer<T> = { status: number; body: T & Partial<ErrorBody>; headers: Headers };

/** The HTTP API as a test (or a person with curl) uses it. */
export function createClient(baseUrl: string, token?: string) {
  const path = (key: string, rest = '') => `${baseUrl}/v1/conversations/${encodeURIComponent(key)}${rest}`;
  const call = async <T>(url: string, init: RequestInit = {}): Promise<Answer<T>> => {
    const response = await fetch(url, {
      ...init,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...init.headers },
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };
  const client = {
    chat: (key: string, body: unknown, headers: Record<string, string> = {}) =>
      call<ChatAccepted>(path(key, '/chat'), { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers }),
    steer: (key: string, body: unknown, headers: Record<string, string> = {}) =>
      call<SteerAnswer>(path(key, '/steer'), { method: 'POST', body: JSON.stringify(body), headers }),
    stop: (key: string, body: unknown = {}) => call<StopAnswer>(path(key, '/stop'), { method: 'POST', body: JSON.stringify(body) }),
    grant: (key: string, subject: string, access: 'read' | 'write') =>
      call<GrantAnswer>(path(key, `/grants/${encodeURIComponent(subject)}`), { method: 'PUT', body: JSON.stringify({ access }) }),
    revoke: (key: string, subject: string) => call<GrantAnswer>(path(key, `/grants/${encodeURIComponent(subject)}`), { method: 'DELETE' }),
    retract: (key: string, input: string) => call<RetractAnswer>(path(key, `/inputs/${encodeURIComponent(input)}`), { method: 'DELETE' }),
    retractLatest: (key: string, kind: 'chat' | 'steer') => call<RetractAnswer>(path(key, `/inputs?latest=${kind}`), { method: 'DELETE' }),
    promote: (key: string, input: string) => call<SteerAnswer>(path(key, `/inputs/${encodeURIComponent(input)}/promote`), { method: 'POST' }),
    status: (key: string) => call<ConversationStatus>(path(key)),
    messages: (key: string, query = '') => call<TranscriptPage>(path(key, `/messages${query}`)),
    turn: (key: string, turn: string) => call<TurnView>(path(key, `/turns/${encodeURIComponent(turn)}`)),
    turnOf: (key: string, input: string) => call<TurnView>(path(key, `/turns?input=${encodeURIComponent(input)}`)),
    /** The turn that answered an input, once it has ended. */
    answered: (key: string, input: string, timeoutMs = 30_000) =>
      vi.waitFor(
        async () => {
          const answer = await client.turnOf(key, input);
          if (answer.status !== 200 || answer.body.status === 'running') throw new Error(`waiting for the answer to ${input} in ${key}: ${answer.status} ${answer.body.status ?? answer.body.error?.code}`);
          return answer.body;
        },
        { ...WAIT, timeout: timeoutMs },
      ),
    /** The turn answering an input, once it has started. */
    started: (key: string, input: string, timeoutMs = 30_000) =>
      vi.waitFor(
        async () => {
          const answer = await client.turnOf(key, input);
          if (answer.status !== 200) throw new Error(`waiting for a turn for ${input} in ${key}: ${answer.status}`);
          return answer.body;
        },
        { ...WAIT, timeout: timeoutMs },
      ),
    events: (key: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
      fetch(path(key, '/events'), { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers }, signal }),
  };
  return client;
}
export type Client = ReturnType<typeof createClient>;
