import type { DomainEvent } from '@rudder/contracts';
import { traceparent, type Pool } from '@rudder/runtime';
import { appendIfNew } from './append-if-new';
import { appendIfUnchanged } from './append-if-unchanged';
import { FencedError, type Epochs } from './fencing';
import { inTransaction, writeEvents } from './write-transaction';
import { AlreadyStoredError, byKeyBytes, type Seen, type StreamRules, type Written } from './writes';

/**
 * Appends to several conversations of one partition in one transaction (an ingested batch),
 * creating them on first sight, once the writer's epoch for the partition is checked. `decide`
 * sees each state and which of the `probe` once keys are stored already (the same input
 * delivered again); locks are taken in one order so batches never deadlock.
 *
 * A conversation stays on the partition where it was first seen, for good: one owner writes
 * it. A conversation already stored on another partition is not written here (its owner is
 * whoever holds that partition, and this writer's epoch says nothing about it); it is returned
 * in `elsewhere` with its partition, for the caller to send its records there.
 *
 * `before` gives, for each conversation written here, the position of its last event before
 * this write (0: none), so a caller that holds a conversation as of exactly that position can
 * fold the stored events without reading the log again.
 *
 * With `seen` giving the state the writer holds of every conversation of the batch (as of its
 * last event), the write is one statement: `decide` runs on those states with nothing stored,
 * and the statement writes only if every conversation is still there, on this partition, and
 * none of the `probe` keys is stored (`appendIfUnchanged`). Otherwise — a conversation not
 * held, the log moved, an input handled before — the transaction decides on what is stored.
 * With none of them held, they are most likely new: their first events and their rows go in one
 * statement too (`appendIfNew`), which writes nothing when any of them has a row already.
 *
 * With `announce` (a channel), what it stores is sent there as it commits, by the write's own
 * statement either way (`announcedCte`): the announcement channel, where the gateways waiting for
 * these decisions hear of them first (docs/architecture.md, "The shortest path").
 */
export async function appendToConversations<S>(
  pool: Pool,
  rules: StreamRules<S>,
  partition: number,
  epochs: Epochs,
  requests: readonly { conversation: string; probe: readonly string[] }[],
  decide: (conversation: string, state: S, stored: ReadonlySet<string>) => DomainEvent[],
  seen: (conversation: string) => Seen<S> | undefined = () => undefined,
  { announce = null }: { announce?: string | null } = {},
): Promise<Written & { elsewhere: Map<string, number> }> {
  const trace = traceparent();
  if (requests.length === 0) return { stored: [], elsewhere: new Map(), before: new Map(), trace };
  const sorted = [...requests].sort((a, b) => byKeyBytes(a.conversation, b.conversation));
  const held = sorted.map((r) => ({ conversation: r.conversation, seen: seen(r.conversation) }));
  if (held.every((h) => h.seen?.state !== undefined)) {
    const writes = held.map(({ conversation, seen }) => {
      const state = seen!.state as S;
      return { conversation, position: seen!.position, state, events: decide(conversation, state, new Set()), trace };
    });
    const probe = sorted.flatMap((r) => r.probe.map((onceKey) => ({ conversation: r.conversation, onceKey })));
    const stored = writes.some((w) => w.events.length > 0)
      ? await appendIfUnchanged(pool, rules, writes, epochs, { partition, probe, announce }).catch((error: unknown) => {
          if (error instanceof AlreadyStoredError) return null; // the transaction finds what is stored
          throw error;
        })
      : null;
    if (stored) return { stored, elsewhere: new Map(), before: new Map(writes.map((w) => [w.conversation, w.position])), trace };
  } else if (held.every((h) => h.seen === undefined)) {
    // None held: new conversations, most likely (a worker holds every conversation it wrote
    // until it lets an idle one go). Their first events and rows in one statement, if so.
    const state = rules.parse({});
    const writes = sorted.map(({ conversation }) => ({ conversation, position: 0, state, events: decide(conversation, state, new Set()), trace }));
    const stored = writes.every((w) => w.events.length > 0) ? await appendIfNew(pool, rules, partition, writes, epochs, { announce }) : null;
    if (stored) return { stored, elsewhere: new Map(), before: new Map(writes.map((w) => [w.conversation, 0])), trace };
  }
  return inTransaction(pool, sorted[0].conversation, async (client) => {
    // The epoch check first (a share lock on the partition's owner row), then the
    // conversations' rows, in one statement: nothing is written when the epoch is not ours.
    // The no-op update keeps the stored partition and locks the row, as a write does, in the
    // one lock order (`byKeyBytes`); two batches creating one conversation on two partitions
    // serialize on its key, the second finds it on the first one's partition.
    const rows = await client.query<{ key: string; state: unknown; partition: number; last_position: string }>({
      name: 'event-store-lock-conversations',
      text: `WITH owner AS (SELECT epoch FROM event_store.partition_owners WHERE partition = $2 FOR SHARE)
       INSERT INTO event_store.conversations (key, partition)
       SELECT k, $2 FROM unnest($1::text[]) AS k WHERE EXISTS (SELECT 1 FROM owner WHERE epoch = $3)
        ORDER BY k COLLATE "C"
       ON CONFLICT (key) DO UPDATE SET partition = event_store.conversations.partition
       RETURNING key, head AS state, partition, last_position`,
      values: [sorted.map((r) => r.conversation), partition, epochs.get(partition) ?? -1],
    });
    if (rows.rows.length === 0) {
      const owner = await client.query<{ epoch: string }>('SELECT epoch FROM event_store.partition_owners WHERE partition = $1', [partition]);
      throw new FencedError(partition, `partition ${partition} is at epoch ${owner.rows[0]?.epoch ?? 'none'}, this writer holds ${epochs.get(partition) ?? 'none'}`);
    }
    const elsewhere = new Map(rows.rows.filter((row) => row.partition !== partition).map((row) => [row.key, row.partition]));
    const states = { rows: rows.rows.filter((row) => !elsewhere.has(row.key)) };
    const here = sorted.filter((r) => !elsewhere.has(r.conversation));
    const probed = await client.query<{ conversation: string; once_key: string }>({
      name: 'event-store-probe-once-keys',
      text: `SELECT conversation, once_key FROM event_store.events
        WHERE (conversation, once_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      values: [here.flatMap((r) => r.probe.map(() => r.conversation)), here.flatMap((r) => r.probe)],
    });
    const stateOf = new Map(states.rows.map((row) => [row.key, rules.parse(row.state)]));
    const storedOf = (conversation: string) =>
      new Set(probed.rows.filter((row) => row.conversation === conversation).map((row) => row.once_key));
    const { stored } = await writeEvents(
      client,
      rules,
      here.map(({ conversation }) => {
        const state = stateOf.get(conversation)!;
        return { conversation, state, events: decide(conversation, state, storedOf(conversation)) };
      }),
      trace,
      undefined,
      announce,
    );
    const before = new Map(states.rows.map((row) => [row.key, Number(row.last_position)]));
    return { stored, elsewhere, before, trace };
  });
}

