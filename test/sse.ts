import { createSseParser, type SseMessage } from '@rudder/contracts';

export type { SseMessage };

/**
 * Reads Server-Sent Events from a fetch response until `until` says stop (or the timeout),
 * and cancels the stream. Returns every message read, in order.
 */
export async function readEvents(
  response: Response,
  until: (message: SseMessage, all: SseMessage[]) => boolean,
  timeoutMs = 30_000,
): Promise<SseMessage[]> {
  if (!response.body) throw new Error(`no event stream (status ${response.status})`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parse = createSseParser();
  const messages: SseMessage[] = [];
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended after ${JSON.stringify(messages.map((m) => m.event))}`);
      for (const message of parse(decoder.decode(value, { stream: true }))) {
        messages.push(message);
        if (until(message, messages)) return messages;
      }
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
}
