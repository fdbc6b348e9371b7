export type SseMessage = { id?: string; event: string; data: unknown };

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
  const messages: SseMessage[] = [];
  let buffer = '';
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended after ${JSON.stringify(messages.map((m) => m.event))}`);
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const message = parseBlock(block);
        if (!message) continue;
        messages.push(message);
        if (until(message, messages)) return messages;
      }
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
}

function parseBlock(block: string): SseMessage | undefined {
  let id: string | undefined;
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  return { id, event, data: JSON.parse(data.join('\n')) };
}
