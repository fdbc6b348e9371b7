/** A message of the events stream as a client reads it: `id` is the event's position (none for tokens). */
export type SseMessage = { id?: string; event: string; data: unknown };

/**
 * A Server-Sent Events parser for clients of `GET …/events`: feed it the text as it arrives,
 * get the complete messages (comments such as keep-alives skipped; `data` parsed as JSON).
 */
export function createSseParser(): (text: string) => SseMessage[] {
  let buffer = '';
  return (text) => {
    buffer += text;
    const messages: SseMessage[] = [];
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const message = parseBlock(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (message) messages.push(message);
    }
    return messages;
  };
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
