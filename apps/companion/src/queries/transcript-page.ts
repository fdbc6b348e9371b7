import type { TranscriptPage } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { Transcript, Turns, type TranscriptRow } from '../read-models/entities';

/**
 * A page of the transcript, oldest first, after a cursor. The cursor is `<position>.<part>`,
 * the sort key of the last message of the previous page; clients treat it as opaque. The rows
 * of rolled-back turns are left out, unless `rolledBack` asks for them (then marked so).
 */
export async function readTranscriptPage(
  readModels: DataSource,
  key: string,
  page: { after: TranscriptCursor | null; limit: number; rolledBack?: boolean },
): Promise<TranscriptPage> {
  const after = page.after ?? { position: Number.MIN_SAFE_INTEGER, part: 0 };
  const query = readModels.manager
    .createQueryBuilder(Transcript, 'm')
    .where('m.conversation = :key', { key })
    .andWhere('(m.position, m.part) > (CAST(:position AS bigint), CAST(:part AS integer))', after);
  if (!page.rolledBack) {
    query.andWhere((q) => `NOT EXISTS ${q.subQuery().select('1').from(Turns, 't').where('t.conversation = m.conversation AND t.id = m.turn AND t.rolledBack').getQuery()}`);
  }
  const rows = await query.orderBy('m.position', 'ASC').addOrderBy('m.part', 'ASC').limit(page.limit + 1).getMany();
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1];
  const rolledBack = page.rolledBack ? await rolledBackOf(readModels, key, items) : new Set<string>();
  return {
    items: items.map(({ id, role, text, turn, steered, at, forkedFrom }) => ({
      id,
      role,
      text,
      turn,
      steered,
      at,
      rolledBack: turn !== null && rolledBack.has(turn),
      ...(forkedFrom === null ? {} : { forkedFrom }),
    })),
    next: rows.length > page.limit ? formatCursor(last) : null,
  };
}

/** Which turns of these rows were rolled back. */
async function rolledBackOf(readModels: DataSource, key: string, rows: readonly TranscriptRow[]): Promise<Set<string>> {
  const turns = [...new Set(rows.flatMap((r) => (r.turn === null ? [] : [r.turn])))];
  if (turns.length === 0) return new Set();
  const found = await readModels.manager
    .createQueryBuilder(Turns, 't')
    .select('t.id', 'id')
    .where('t.conversation = :key', { key })
    .andWhere('t.id IN (:...turns)', { turns })
    .andWhere('t.rolledBack')
    .getRawMany<{ id: string }>();
  return new Set(found.map((r) => r.id));
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
