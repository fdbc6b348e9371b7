import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { traceparent, type Pool } from '@rudder/runtime';
import { FencedError, type Epochs } from './fencing';
import { singleWrites, type UnchangedWriter, type WriterOptions } from './grouped-writes';
import { inTransaction, writeEvents } from './write-transaction';
import type { Seen, StreamRules, Written } from './writes';

/**
 * Appends what `decide` makes of the conversation's state, all or none, once the writer is
 * checked to hold `epochs` for the conversation's partition (FencedError otherwise). Throws
 * AlreadyStoredError when a once key was used before: nothing is written and the caller
 * reloads what is stored.
 *
 * Every write of a conversation holds its row lock: that orders its writes (its event
 * positions grow in commit order) and serializes decisions with each other — a steer's
 * landing with the turn's close. Two ways to it, with one outcome:
 *
 * - **One statement**, when the writer holds the state as of the conversation's last event
 *   (`seen.state` at `seen.position`): `decide` runs on that state first, and the statement
 *   writes its events only if, under the row lock, the conversation's last event is still at
 *   `seen.position` and the epoch still holds. No transaction of its own, one round trip: the
 *   turn's steps, when nothing arrived during them. (`decide` deciding nothing on that state
 *   takes the transaction, which decides on the stored one.)
 * - **A transaction** otherwise (or when that statement wrote nothing): lock the row and check
 *   the epoch, decide on the state stored there, write, commit.
 *
 * `earlier` are the conversation's events after `seen.position` that were in the log before
 * this write (others' writes the caller has not read yet), so a caller folding the log can
 * apply them, then `stored`, in log order, without another round trip.
 *
 * `writeUnchanged` makes the one statement: by default a statement of its own; a writer of
 * many conversations at once passes `groupedWrites`, which shares it with theirs. With
 * `announce` (give `writeUnchanged` the same), what the transaction stores is announced on the
 * channel it answers as it commits (`announcedCte`), as the one statement announces its own.
 */
export async function appendToConversation<S>(
  pool: Pool,
  rules: StreamRules<S>,
  conversation: string,
  epochs: Epochs,
  decide: (state: S) => DomainEvent[],
  seen: Seen<S> = { position: Number.MAX_SAFE_INTEGER },
  writeUnchanged: UnchangedWriter<S> = singleWrites(pool, rules),
  { announce }: WriterOptions = {},
): Promise<Written & { earlier: ConversationEvent[] }> {
  const trace = traceparent();
  const events = seen.state === undefined ? [] : decide(seen.state);
  if (events.length > 0) {
    const stored = await writeUnchanged({ conversation, position: seen.position, state: seen.state as S, events, trace }, epochs);
    // The guard wrote only with the conversation's last event at `seen.position`.
    if (stored) return { stored, earlier: [], before: new Map([[conversation, seen.position]]), trace };
  }
  return inTransaction(pool, conversation, async (client) => {
    const { rows } = await client.query<{ key: string; state: unknown; epoch: string; partition: number; last_position: string }>({
      name: 'event-store-lock-conversation',
      text: `SELECT c.key, c.head AS state, c.partition, p.epoch, c.last_position
         FROM event_store.conversations c
         JOIN event_store.partition_owners p ON p.partition = c.partition
        WHERE c.key = $1
          FOR UPDATE OF c FOR SHARE OF p`,
      values: [conversation],
    });
    // No row: an unknown conversation, or a partition nobody owns yet — either way not ours.
    if (rows.length === 0) throw new FencedError(null, `${conversation} has no owned partition`);
    const [row] = rows;
    if (Number(row.epoch) !== epochs.get(row.partition)) {
      throw new FencedError(row.partition, `partition ${row.partition} is at epoch ${row.epoch}, this writer holds ${epochs.get(row.partition) ?? 'none'}`);
    }
    const state = rules.parse(row.state);
    const written = await writeEvents(client, rules, [{ conversation, state, events: decide(state) }], trace, { conversation, after: seen.position }, announce?.() ?? null);
    return { ...written, before: new Map([[conversation, Number(row.last_position)]]), trace };
  });
}
