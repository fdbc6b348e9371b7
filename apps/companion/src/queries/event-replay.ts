import type { ConversationEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';

/** A conversation's events after a position (all of them without one), by position: SSE replay after Last-Event-ID. */
export async function readEventsAfter(
  pool: Pool,
  key: string,
  page: { after: number | null; limit: number },
): Promise<{ items: ConversationEvent[] }> {
  const { rows } = await pool.query<{ conversation: string; position: string; id: string; type: string; data: unknown; at: Date }>(
    `SELECT conversation, position, id, type, data, at
       FROM companion.events
      WHERE conversation = $1 AND ($2::bigint IS NULL OR position > $2::bigint)
      ORDER BY position
      LIMIT $3`,
    [key, page.after, page.limit],
  );
  // The copies were parsed as ConversationEvent before they were stored.
  const items = rows.map(
    (r) =>
      ({ v: 1, id: r.id, conversation: r.conversation, position: Number(r.position), at: r.at.toISOString(), type: r.type, data: r.data }) as ConversationEvent,
  );
  return { items };
}
