import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';
import type { Epochs } from './fencing';
import { ANNOUNCED_JOIN, announcedCte } from './announce';
import { toConversationEvent, type EventRow } from './stored-event';
import { insertedCte, writeColumns } from './write-columns';
import { alreadyStored, type StreamRules } from './writes';

/**
 * One conversation's part of a one-statement write: `events` decided on `state`, its state as
 * of its last event at `position`, stored with `trace` (the writer's traceparent, null without).
 */
export type UnchangedWrite<S> = { conversation: string; position: number; state: S; events: DomainEvent[]; trace: string | null };

/**
 * The one-statement write, of one conversation or several: each one's `events` decided on its
 * state as of its last event at `position`. The guard locks the conversations' rows (in key
 * order, as every write of several does) and shares their partitions' owner rows, as the
 * transaction does; under READ COMMITTED a row that changed while the statement waited for its
 * lock is checked again as it is now, so a write committed meanwhile (an ingested steer, a
 * step) moves `last_position` and the guard comes back short. It writes all or nothing: only
 * when every conversation is where its writer saw it, the epoch still holds, each is on
 * `partition` (when given: an ingested batch writes only its own partition's conversations)
 * and none of the `probe` once keys is stored (an input handled before). Otherwise nothing is
 * written and this answers null: the caller decides again in a transaction, on what is stored.
 * A probe key stored by a write committed after this statement began was committed by a writer
 * that moved `last_position` too, which the guard sees.
 *
 * With `announce` (a channel), what it stored is also sent there as it commits (`announcedCte`).
 *
 * Its plan is cached and generic after a few runs, made for arrays of unknown length, so every
 * part of it finds its rows by a key whatever the tables hold: each probe key is one lookup in
 * the `(conversation, once_key)` index (a correlated subquery, `OFFSET 0` so it is not turned
 * into a join, which a generic plan made a hash of `event_store.events` read whole: 1.95 ms a
 * statement at 30,000 events, against 0.47), and the heads are updated by `key = ANY`, not by a
 * join with the array.
 */
export async function appendIfUnchanged<S>(
  pool: Pool,
  rules: StreamRules<S>,
  writes: readonly UnchangedWrite<S>[],
  epochs: Epochs,
  {
    partition = null,
    probe = [],
    announce = null,
  }: { partition?: number | null; probe?: readonly { conversation: string; onceKey: string }[]; announce?: string | null } = {},
): Promise<ConversationEvent[] | null> {
  const columns = writeColumns(rules, writes);
  try {
    const { rows } = await pool.query<EventRow>({
      name: 'event-store-append-if-unchanged',
      text: `WITH guard AS (
         SELECT c.key
           FROM event_store.conversations c
           JOIN event_store.partition_owners p ON p.partition = c.partition
          WHERE c.key = ANY($1::text[]) AND c.last_position = ($2::bigint[])[array_position($1::text[], c.key)]
            AND ($3::int IS NULL OR c.partition = $3)
            AND (p.partition, p.epoch) IN (SELECT * FROM unnest($4::int[], $5::bigint[]))
          ORDER BY c.key COLLATE "C"
            FOR UPDATE OF c FOR SHARE OF p
       ), go AS (
         SELECT (SELECT count(*) FROM guard) = cardinality($1::text[])
            AND NOT EXISTS (SELECT 1 FROM unnest($6::text[], $7::text[]) AS k (conversation, once_key)
                             WHERE EXISTS (SELECT 1 FROM event_store.events e
                                            WHERE e.conversation = k.conversation AND e.once_key = k.once_key OFFSET 0)) AS ok
       ), ${insertedCte(8, 16, '(SELECT ok FROM go)')}, heads AS (
         UPDATE event_store.conversations c
            SET head = ($14::jsonb[])[array_position($13::text[], c.key)],
                open_work = ($15::boolean[])[array_position($13::text[], c.key)],
                last_position = (SELECT max(i.position) FROM inserted i WHERE i.conversation = c.key)
          WHERE c.key = ANY($13::text[]) AND (SELECT ok FROM go)
       ), ${announcedCte(17)}
       SELECT i.* FROM inserted i ${ANNOUNCED_JOIN} ORDER BY i.position`,
      values: [
        writes.map((w) => w.conversation),
        writes.map((w) => w.position),
        partition,
        [...epochs.keys()],
        [...epochs.values()],
        probe.map((k) => k.conversation),
        probe.map((k) => k.onceKey),
        ...columns.events,
        ...columns.heads,
        columns.traces,
        announce,
      ],
    });
    return rows.length === 0 ? null : rows.map(toConversationEvent);
  } catch (error) {
    throw alreadyStored(error, writes.map((w) => w.conversation).join(', '));
  }
}
