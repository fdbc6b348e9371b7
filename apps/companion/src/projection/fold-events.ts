import type { ConversationEvent } from '@rudder/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import { Approvals, Conversations, EventCopies, Inputs, Transcript, Turns } from '../read-models/entities';
import { prepared, rowsAsJson, rowsByKeyAsJson, rowsFromJson, writeRows } from '../read-models/recordsets';
import { isKnownEvent } from './conversation-state';
import { foldRows, rowsNeeded, type Needed, type Rows } from './fold-rows';

export type FoldResult = {
  /** Events folded by this call. */
  applied: number;
  /** Events skipped because they were folded before (or repeated within the batch). */
  duplicates: number;
};

/**
 * Folds a batch of events into the read models, exactly once per event.
 *
 * One transaction per batch, with a number of round trips that does not grow with its size: lock the
 * batch's conversations; find which of the batch's events were folded before and load the rows
 * the batch touches, in one statement; fold the others in memory (`foldRows`); write back what
 * changed and copy the events, every table in one statement (`read-models/recordsets.ts`).
 * Either all of it commits or none of it does, so a crash anywhere leaves no half-applied event.
 *
 * An event was folded before exactly when its copy is in `companion.events`: the copy is written
 * by the transaction that folds it, keyed by (conversation, position), which is the event's
 * place in the log (an event published twice, or redelivered, comes with the same place). So the
 * relay publishing twice and Kafka redelivering change nothing, and no table of ids grows beside
 * the copies.
 *
 * The per-conversation advisory locks serialize two consumers that briefly fold the same
 * partition during a rebalance, so neither overwrites rows the other changed, and neither
 * folds an event the other is folding (the look for copies comes after the locks).
 */
export async function foldEvents(readModels: DataSource, events: readonly ConversationEvent[]): Promise<FoldResult> {
  // An id repeated within the batch is folded once, as its first occurrence; a type this
  // companion does not know (a newer worker's) is skipped: `evolve` refuses it.
  const firstOf = new Map<string, ConversationEvent>();
  for (const e of events) if (isKnownEvent(e) && !firstOf.has(e.id)) firstOf.set(e.id, e);
  const batch = [...firstOf.values()];
  if (batch.length === 0) return { applied: 0, duplicates: 0 };

  return readModels.transaction(async (manager) => {
    const conversations = [...new Set(batch.map((e) => e.conversation))].sort();
    await prepared(
      manager,
      'companion-fold-lock',
      `SELECT ${FOLD_PLANNING}, (SELECT count(pg_advisory_xact_lock(hashtext('rudder-companion:' || key)))
                                   FROM (SELECT key FROM unnest($1::text[]) AS key ORDER BY key) AS sorted)`,
      [conversations],
    );
    // The ids not applied before, and the rows every event of the batch may read (a duplicate's too: rare, and harmless).
    const { fresh, rows } = await applyIdsAndLoadRows(manager, batch);
    // Position order within a conversation is the log's order; sorting also mends a batch
    // in which the relay published a conversation's events out of order.
    const news = batch
      .filter((e) => fresh.has(e.id))
      .sort((a, b) => (a.conversation === b.conversation ? a.position - b.position : a.conversation < b.conversation ? -1 : 1));
    if (news.length > 0) {
      const changes = foldRows(rows, news);
      await writeRows(manager, 'companion-fold-write', [
        { entity: Conversations, rows: changes.conversations, as: 'upsert' },
        { entity: Inputs, rows: changes.inputs, as: 'upsert' },
        { entity: Turns, rows: changes.turns, as: 'upsert' },
        { entity: Approvals, rows: changes.approvals, as: 'upsert' },
        // A message already in the transcript (the same reply of a step, stored once) is kept as it was.
        { entity: Transcript, rows: changes.transcript, as: 'insertNew' },
        { entity: EventCopies, rows: news, as: 'insertNew' },
      ]);
    }
    return { applied: news.length, duplicates: events.length - news.length };
  });
}

/**
 * How the fold's statements are planned, set for its transaction by the statement that takes its
 * locks (no round trip of its own). Each statement is planned once per connection, generically:
 * planned at every batch, the read below cost PostgreSQL 0.5 ms a batch, more than running it.
 * And that one plan must be right for tables of any size, though it is made for the tables as
 * they are the first time (empty, in a new deployment), and kept while they grow until an
 * ANALYZE: so no sequential scans, which are the cheapest way to read an empty table and the
 * worst to read a large one. Every row the fold reads it finds by its primary key.
 */
export const FOLD_PLANNING = `set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`;

/**
 * One round trip: the batch's event ids whose copy is not in `companion.events` yet (`fresh`),
 * and every row the batch may read. The read's snapshot is the statement's, taken after the
 * batch's locks: what another fold committed before them is in it.
 *
 * `OFFSET 0` keeps the look for copies a probe of the primary key per event: without it the
 * planner may turn it into an anti-join, and the statement's plan, prepared and cached while
 * the table was small, then hashed the whole of `companion.events` on every batch (measured:
 * 80 ms a batch at 200,000 copies, against 0.1 ms with the probe).
 */
async function applyIdsAndLoadRows(manager: EntityManager, batch: readonly ConversationEvent[]): Promise<{ fresh: Set<string>; rows: Rows }> {
  const needed: Needed = rowsNeeded(batch);
  const [rows] = (await prepared(
    manager,
    'companion-fold-apply-and-load',
    freshAndRowsSql(manager),
    [
      needed.conversations,
      needed.inputs.map((k) => k.conversation),
      needed.inputs.map((k) => k.id),
      needed.turns.map((k) => k.conversation),
      needed.turns.map((k) => k.id),
      batch.map((e) => e.id),
      batch.map((e) => e.conversation),
      batch.map((e) => e.position),
      needed.approvals.map((k) => k.conversation),
      needed.approvals.map((k) => k.id),
    ],
  )) as (Rows & { fresh: string[] })[];
  return {
    fresh: new Set(rows.fresh),
    rows: {
      conversations: rowsFromJson(manager, Conversations, rows.conversations),
      inputs: rowsFromJson(manager, Inputs, rows.inputs),
      turns: rowsFromJson(manager, Turns, rows.turns),
      approvals: rowsFromJson(manager, Approvals, rows.approvals),
    },
  };
}

/**
 * The statement of `applyIdsAndLoadRows`: $1 the conversations, $2/$3 the inputs' keys, $4/$5 the
 * turns', $6/$7/$8 the events' ids, conversations and positions, $9/$10 the turns whose approvals
 * it reads. Exported for the spec that checks its plan.
 */
export function freshAndRowsSql(manager: EntityManager): string {
  const byKey = (first: number) => `unnest($${first}::text[], $${first + 1}::text[])`;
  return `SELECT (SELECT coalesce(json_agg(b.id), '[]')
                    FROM unnest($6::text[], $7::text[], $8::bigint[]) AS b (id, conversation, position)
                   WHERE NOT EXISTS (SELECT 1 FROM companion.events c WHERE c.conversation = b.conversation AND c.position = b.position OFFSET 0)) AS fresh,
                 ${rowsAsJson(manager, Conversations, 't.key = ANY($1::text[])')} AS conversations,
                 ${rowsByKeyAsJson(manager, Inputs, byKey(2))} AS inputs,
                 ${rowsByKeyAsJson(manager, Turns, byKey(4))} AS turns,
                 ${rowsByKeyAsJson(manager, Approvals, byKey(9), 'turn')} AS approvals`;
}
