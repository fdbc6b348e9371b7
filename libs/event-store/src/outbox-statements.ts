/**
 * The outbox relay's statements (outbox-relay.ts). Each stores the watermarks of what the relay
 * published (`marks`: conversations in key order, and positions) as it runs.
 */
import type { Pool } from '@rudder/runtime';
import { EVENT_COLUMNS, type EventRow } from './stored-event';

/**
 * Stores watermarks (`$1` conversations in key order, `$2` positions), never lowering one. The
 * rows are locked in key order (bytes, `byKeyBytes`), as every write of several conversations locks them, so it never
 * deadlocks with a writer. The statement's own snapshot does not see what it stores: a read in
 * the same statement takes the greater of the stored watermark and the one it stores.
 */
const MARK = `WITH locked AS (
  SELECT key FROM event_store.conversations WHERE key = ANY($1::text[]) ORDER BY key COLLATE "C" FOR NO KEY UPDATE
), marked AS (
  UPDATE event_store.conversations c
     SET published_position = greatest(c.published_position, ($2::bigint[])[array_position($1::text[], c.key)])
   WHERE c.key IN (SELECT key FROM locked))`;

/** Stores `marks` and reads nothing: the watermarks of what was published, when no read of the table came to store them first. */
export async function markPublished(pool: Pool, marks: [string[], number[]]): Promise<void> {
  await pool.query({ name: 'event-store-outbox-mark', text: `${MARK} SELECT 1`, values: marks });
}

const COLUMNS = EVENT_COLUMNS.split(', ').map((c) => 'e.' + c).join(', ');

/**
 * The owned partitions' whole outbox, storing `marks` as it reads: the owned conversations
 * whose last event is past their watermark (the partial index conversations_to_publish, whose
 * dead entries since the last vacuum make it the dearer read; the watermark this statement
 * stores is not in its snapshot, hence m), each read by a range of its (conversation,
 * position) index.
 */
export async function readOwnedOutbox(pool: Pool, marks: [string[], number[]], owned: readonly number[], batchSize: number): Promise<EventRow[]> {
  const { rows } = await pool.query<EventRow>({
    name: 'event-store-outbox-sweep',
    text: `${MARK}, due AS MATERIALIZED (
               SELECT c.key, greatest(c.published_position, m.position) AS after
                 FROM event_store.conversations c
                 LEFT JOIN unnest($1::text[], $2::bigint[]) AS m(conversation, position) ON m.conversation = c.key
                WHERE c.partition = ANY($3::int[]) AND c.last_position > c.published_position)
             SELECT ${COLUMNS}
               FROM due CROSS JOIN LATERAL (
                 SELECT ${COLUMNS} FROM event_store.events e WHERE e.conversation = due.key AND e.position > due.after OFFSET 0) e
              ORDER BY e.position LIMIT $4`,
    values: [...marks, owned, batchSize],
  });
  return rows;
}

/**
 * The given conversations' rows after `after` (what this relay published of each) or their
 * stored watermark, whichever is higher, storing `marks` as it reads: only what is new.
 * Planned at each call (no name: a generic plan of it read the conversations' whole history,
 * growing with it), each conversation read by a range of its (conversation, position) index.
 */
export async function readConversationsAfter(
  pool: Pool,
  marks: [string[], number[]],
  owned: readonly number[],
  batchSize: number,
  conversations: readonly string[],
  after: readonly number[],
): Promise<EventRow[]> {
  const { rows } = await pool.query<EventRow>({
    text: `${MARK}
             SELECT ${COLUMNS}
               FROM unnest($5::text[], $6::bigint[]) AS w(conversation, after)
               JOIN event_store.conversations c ON c.key = w.conversation AND c.partition = ANY($3::int[])
               CROSS JOIN LATERAL (
                 SELECT ${COLUMNS} FROM event_store.events e
                  WHERE e.conversation = w.conversation AND e.position > greatest(w.after, c.published_position) OFFSET 0) e
              ORDER BY e.position LIMIT $4`,
    values: [...marks, owned, batchSize, conversations, after],
  });
  return rows;
}
