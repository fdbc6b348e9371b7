import type { TranscriptPage } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Transcript } from '../read-models/entities';

/**
 * A page of the transcript, oldest first, after a cursor. The cursor is `<position>.<part>`,
 * the sort key of the last message of the previous page; clients treat it as opaque.
 */
export async function readTranscriptPage(
  readModels: DataSource,
  key: string,
  page: { after: TranscriptCursor | null; limit: number },
): Promise<TranscriptPage> {
  const after = page.after ?? { position: Number.MIN_SAFE_INTEGER, part: 0 };
  const rows = await readModels.manager
    .createQueryBuilder(Transcript, 'm')
    .where('m.conversation = :key', { key })
    .andWhere('(m.position, m.part) > (CAST(:position AS bigint), CAST(:part AS integer))', after)
    .orderBy('m.position', 'ASC')
    .addOrderBy('m.part', 'ASC')
    .limit(page.limit + 1)
    .getMany();
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1];
  return {
    items: items.map(({ id, role, text, turn, steered, at }) => ({ id, role, text, turn, steered, at })),
    next: rows.length > page.limit ? formatCursor(last) : null,
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
