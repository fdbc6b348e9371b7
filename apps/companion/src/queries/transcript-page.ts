import type { TranscriptPage } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';

/**
 * A page of the transcript, oldest first, after a cursor. The cursor is `<position>.<part>`,
 * the sort key of the last message of the previous page; clients treat it as opaque.
 */
export async function readTranscriptPage(
  pool: Pool,
  key: string,
  page: { after: TranscriptCursor | null; limit: number },
): Promise<TranscriptPage> {
  const after = page.after ?? { position: Number.MIN_SAFE_INTEGER, part: 0 };
  const { rows } = await pool.query<{
    position: string;
    part: number;
    id: string;
    role: 'user' | 'assistant';
    text: string;
    turn: string | null;
    steered: boolean;
    at: Date;
  }>(
    `SELECT position, part, id, role, text, turn, steered, at
       FROM companion.transcript
      WHERE conversation = $1 AND (position, part) > ($2::bigint, $3::integer)
      ORDER BY position, part
      LIMIT $4`,
    [key, after.position, after.part, page.limit + 1],
  );
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1];
  return {
    items: items.map((r) => ({ id: r.id, role: r.role, text: r.text, turn: r.turn, steered: r.steered, at: r.at.toISOString() })),
    next: rows.length > page.limit ? formatCursor({ position: Number(last.position), part: last.part }) : null,
  };
}

export type TranscriptCursor = { position: number; part: number };

const CURSOR = /^(-?\d{1,16})\.(\d{1,9})$/;

export const formatCursor = (cursor: TranscriptCursor): string => `${cursor.position}.${cursor.part}`;

/** Null when the text is not a cursor this service gave out. */
export function parseCursor(text: string): TranscriptCursor | null {
  const match = CURSOR.exec(text);
  if (!match) return null;
  const position = Number(match[1]);
  return Number.isSafeInteger(position) ? { position, part: Number(match[2]) } : null;
}
