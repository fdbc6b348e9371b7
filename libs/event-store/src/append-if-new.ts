import type { ConversationEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import { ANNOUNCED_JOIN, announcedCte } from './announce';
import type { UnchangedWrite } from './append-if-unchanged';
import type { Epochs } from './fencing';
import { toConversationEvent, type EventRow } from './stored-event';
import { insertedCte, writeColumns } from './write-columns';
import type { StreamRules } from './writes';

/**
 * The one-statement write of conversations' first events: each conversation's row is created by
 * the same statement, on `partition`, with its state after its events. It writes all or nothing,
 * only when none of the conversations has a row yet and the writer's epoch for the partition
 * still holds (a share lock on the owner's row, as every write takes); otherwise it writes
 * nothing and answers null, and the caller writes in a transaction on what is stored (a
 * conversation the writer merely does not hold, one first seen on another partition). Two
 * writers creating one conversation at once: the second waits on the row's key and fails with a
 * unique violation, also answered null. A new conversation has no events, so no once key is
 * probed. The writes' `position` is 0 and their `state` the stream's first (`rules.parse` of a
 * new row's `{}`).
 *
 * A new conversation's first input used to take a transaction of four statements (the
 * conversations' rows, the once keys probed, the events, the commit) after its `BEGIN`.
 */
export async function appendIfNew<S>(
  pool: Pool,
  rules: StreamRules<S>,
  partition: number,
  writes: readonly UnchangedWrite<S>[],
  epochs: Epochs,
  { announce = null }: { announce?: string | null } = {},
): Promise<ConversationEvent[] | null> {
  const columns = writeColumns(rules, writes);
  try {
    const { rows } = await pool.query<EventRow>({
      name: 'event-store-append-if-new',
      text: `WITH owner AS (
         SELECT epoch FROM event_store.partition_owners WHERE partition = $1 AND epoch = $2 FOR SHARE
       ), go AS (
         SELECT EXISTS (SELECT 1 FROM owner)
            AND NOT EXISTS (SELECT 1 FROM event_store.conversations WHERE key = ANY($3::text[])) AS ok
       ), ${insertedCte(4, 12, '(SELECT ok FROM go)')}, created AS (
         INSERT INTO event_store.conversations (key, partition, head, open_work, last_position)
         SELECT h.key, $1, h.state, h.open, (SELECT max(i.position) FROM inserted i WHERE i.conversation = h.key)
           FROM unnest($9::text[], $10::jsonb[], $11::boolean[]) AS h(key, state, open)
          WHERE (SELECT ok FROM go)
          ORDER BY h.key COLLATE "C"
       ), ${announcedCte(13)}
       SELECT i.* FROM inserted i ${ANNOUNCED_JOIN} ORDER BY i.position`,
      values: [partition, epochs.get(partition) ?? -1, writes.map((w) => w.conversation), ...columns.events, ...columns.heads, columns.traces, announce],
    });
    return rows.length === 0 ? null : rows.map(toConversationEvent);
  } catch (error) {
    // Another writer created one of them meanwhile: the transaction decides on what it stored.
    if ((error as { code?: string }).code === '23505') return null;
    throw error;
  }
}
