import type { RudderClient } from '@rudder/client';
import type { ConversationEvent, TranscriptItem } from '@rudder/contracts';
import type { ConversationViews } from './check';

/** How long a read may take (the gateway answers 503 after 5 s when its view is behind). */
export const READ_TIMEOUT_MS = 10_000;
/** How long a chat or steer may take: the gateway waits for the worker's decision, and answers 503 after its own 30 s. */
export const WRITE_TIMEOUT_MS = 45_000;

/** The whole transcript, page by page (at most `maxPages` of 200). */
export async function transcript(client: RudderClient, key: string, maxPages = 200): Promise<TranscriptItem[]> {
  const items: TranscriptItem[] = [];
  let after: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const answer = await client.messages(key, { limit: 200, after }, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) }).catch((error: unknown) => {
      throw new Error(`GET messages of ${key}: ${String(error)}`);
    });
    items.push(...answer.items);
    if (answer.next === null) return items;
    after = answer.next;
  }
  throw new Error(`the transcript of ${key} has more than ${maxPages} pages`);
}

/**
 * The event stream from `after` (`Last-Event-ID`): the replay, read until the stream has been
 * quiet for `quietMs` once open (it is live after the replay, so it never ends by itself), at
 * most `maxMs`. Answers the stored events' messages as the gateway sent them (`onMessage`),
 * not what the client yields: the client drops an event at or below a position it has yielded,
 * which would hide the duplicates and reorderings the soak looks for.
 */
export async function replay(client: RudderClient, key: string, after = 0, options: { quietMs?: number; maxMs?: number } = {}): Promise<ConversationViews['stream']> {
  const quietMs = options.quietMs ?? 1500;
  const done = new AbortController();
  const hardStop = setTimeout(() => done.abort(), options.maxMs ?? 30_000);
  let quiet: NodeJS.Timeout | undefined;
  let opened = false;
  const stillGoing = () => {
    clearTimeout(quiet);
    quiet = setTimeout(() => done.abort(), quietMs);
  };
  const messages: ConversationViews['stream'] = [];
  try {
    const stream = client.events(key, {
      after,
      signal: done.signal,
      onOpen: () => ((opened = true), stillGoing()),
      onMessage: (message) => {
        stillGoing();
        if (message.event !== 'token') messages.push({ id: message.id, event: message.event, data: JSON.parse(message.data) as ConversationEvent });
      },
    });
    for await (const _ of stream); // the messages are taken as sent, above
    if (!opened) throw new Error(`GET events of ${key}: no stream within ${options.maxMs ?? 30_000} ms`);
    return messages;
  } finally {
    clearTimeout(hardStop);
    clearTimeout(quiet);
    done.abort();
  }
}
