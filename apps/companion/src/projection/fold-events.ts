import type { ConversationEvent } from '@rudder/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import { Conversations, EventCopies, Inputs, Transcript, Turns } from '../read-models/entities';
import { insertNewRows, rowsAsJson, rowsFromJson, upsertRows } from '../read-models/recordsets';
import { foldRows, rowsNeeded, type Needed, type Rows } from './fold-rows';

export type FoldResult = {
  /** Events folded by this call. */
  applied: number;
  /** Events skipped because their id was already applied (or repeated within the batch). */
  duplicates: number;
};

/**
 * Folds a batch of events into the read models, exactly once per event id.
 *
 * One transaction per batch, with a number of round trips that does not grow with its size: lock the
 * batch's conversations, record the event ids in `applied_events` (the ids already there are
 * dropped: the relay may publish twice, Kafka may redeliver), load the rows the new events
 * touch, fold them in memory (`foldRows`), write back what changed (one statement per table:
 * `read-models/recordsets.ts`) and copy the events. Either all of it commits or none of it does, so a crash anywhere leaves no
 * half-applied event.
 *
 * The per-conversation advisory locks serialize two consumers that briefly fold the same
 * partition during a rebalance, so neither overwrites rows the other changed.
 */
export async function foldEvents(readModels: DataSource, events: readonly ConversationEvent[]): Promise<FoldResult> {
  // An id repeated within the batch is folded once, as its first occurrence.
  const firstOf = new Map<string, ConversationEvent>();
  for (const e of events) if (!firstOf.has(e.id)) firstOf.set(e.id, e);
  const batch = [...firstOf.values()];
  if (batch.length === 0) return { applied: 0, duplicates: 0 };

  return readModels.transaction(async (manager) => {
    const conversations = [...new Set(batch.map((e) => e.conversation))].sort();
    await manager.query(
      `SELECT pg_advisory_xact_lock(hashtext('rudder-companion:' || key))
         FROM (SELECT key FROM unnest($1::text[]) AS key ORDER BY key) AS sorted`,
      [conversations],
    );
    const inserted: { id: string }[] = await manager.query(
      `INSERT INTO companion.applied_events (id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING RETURNING id`,
      [batch.map((e) => e.id)],
    );
    const fresh = new Set(inserted.map((r) => r.id));
    // Position order within a conversation is the log's order; sorting also mends a batch
    // in which the relay published a conversation's events out of order.
    const news = batch
      .filter((e) => fresh.has(e.id))
      .sort((a, b) => (a.conversation === b.conversation ? a.position - b.position : a.conversation < b.conversation ? -1 : 1));
    if (news.length > 0) {
      const changes = foldRows(await loadRows(manager, rowsNeeded(news)), news);
      await upsertRows(manager, Conversations, changes.conversations);
      await upsertRows(manager, Inputs, changes.inputs);
      await upsertRows(manager, Turns, changes.turns);
      // A message already in the transcript (the same reply of a step, stored once) is kept as it was.
      await insertNewRows(manager, Transcript, changes.transcript);
      await insertNewRows(manager, EventCopies, news);
    }
    return { applied: news.length, duplicates: events.length - news.length };
  });
}

/** One round trip: every row the batch may read. */
async function loadRows(manager: EntityManager, needed: Needed): Promise<Rows> {
  const byKey = (first: number) => `(t.conversation, t.id) IN (SELECT * FROM unnest($${first}::text[], $${first + 1}::text[]))`;
  const [rows] = (await manager.query(
    `SELECT ${rowsAsJson(manager, Conversations, 't.key = ANY($1::text[])')} AS conversations,
            ${rowsAsJson(manager, Inputs, byKey(2))} AS inputs,
            ${rowsAsJson(manager, Turns, byKey(4))} AS turns`,
    [
      needed.conversations,
      needed.inputs.map((k) => k.conversation),
      needed.inputs.map((k) => k.id),
      needed.turns.map((k) => k.conversation),
      needed.turns.map((k) => k.id),
    ],
  )) as Rows[];
  return {
    conversations: rowsFromJson(manager, Conversations, rows.conversations),
    inputs: rowsFromJson(manager, Inputs, rows.inputs),
    turns: rowsFromJson(manager, Turns, rows.turns),
  };
}
