/**
 * Where a client of `GET …/events` stands, as its `Last-Event-ID` says: the position of the
 * last stored event it has, and the offset (on `agent.tokens`) of the last token it has, if
 * any. A stored event's SSE id is its position (`42`); a token's is `<position>.<offset>`
 * (`42.1077`): the last position its stream had sent before it, and its own offset. So the id
 * of whatever message came last resumes both kinds: events after the position, tokens after
 * the offset. A bare position (a stored event came last) resumes the tokens that followed it.
 */
export type StreamCursor = { position: number; tokenOffset: number | null };

export const STREAM_ID_PATTERN = /^(\d{1,15})(?:\.(\d{1,15}))?$/;

/** The cursor of an SSE id (`Last-Event-ID`), or undefined when it is not one. */
export function parseStreamId(id: string): StreamCursor | undefined {
  const match = STREAM_ID_PATTERN.exec(id);
  if (!match) return undefined;
  return { position: Number(match[1]), tokenOffset: match[2] === undefined ? null : Number(match[2]) };
}

export const formatStreamId = (cursor: StreamCursor): string =>
  cursor.tokenOffset === null ? String(cursor.position) : `${cursor.position}.${cursor.tokenOffset}`;
