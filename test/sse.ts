import { EventSourceParserStream } from 'eventsource-parser/stream';

/** A message of the events stream as a client reads it: `id` is a `StreamCursor` (`parseStreamId` in libs/contracts). */
export type SseMessage = { id?: string; event: string; data: unknown };

/** The messages of a Server-Sent Events body as they come (comments such as keep-alives skipped; `data` parsed as JSON). */
export function sseMessages(response: Response): ReadableStream<SseMessage> {
  if (!response.body) throw new Error(`no event stream (status ${response.status})`);
  return response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .pipeThrough(
      new TransformStream({
        transform: (message, controller) => controller.enqueue({ id: message.id, event: message.event ?? 'message', data: JSON.parse(message.data) }),
      }),
    );
}

/**
 * Reads Server-Sent Events from a fetch response until `until` says stop (or the timeout),
 * and cancels the stream. Returns every message read, in order.
 */
export async function readEvents(
  response: Response,
  until: (message: SseMessage, all: SseMessage[]) => boolean,
  timeoutMs = 30_000,
): Promise<SseMessage[]> {
  const reader = sseMessages(response).getReader();
  const messages: SseMessage[] = [];
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended after ${JSON.stringify(messages.map((m) => m.event))}`);
      messages.push(value);
      if (until(value, messages)) return messages;
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
}
