import { randomUUID } from 'node:crypto';
import { storableJson, type ConversationEvent, type DomainEvent } from '@rudder/contracts';
import type { Pool, PoolClient } from '@rudder/runtime';
import { FencedError, type Epochs } from './fencing';
import { evolveHead, parseHead, type ConversationHead } from './head';
import { onceKey } from './once-key';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

/** An event's once key was already used: what it records is stored already (a retry, or another owner). */
export class AlreadyStoredError extends Error {
  readonly code = 'already_stored';
  constructor(readonly conversation: string, detail: string) {
    super(`already stored in ${conversation}: ${detail}`);
  }
}

type HeadRow = { key: string; head: Partial<ConversationHead> | null };
const toHead = (row: HeadRow): ConversationHead => parseHead(row.head);

/**
 * Appends what `decide` makes of the conversation's head, in one transaction, all or none.
 * The conversation row is locked first: that orders every write of the conversation (its
 * event positions grow in commit order) and serializes decisions with each other — a steer's
 * landing with the turn's close. The same statement checks the writer still holds `epochs`
 * for the conversation's partition (FencedError otherwise). Throws AlreadyStoredError when a
 * once key was used before: nothing is written and the caller reloads what is stored.
 */
export async function appendToConversation(
  pool: Pool,
  conversation: string,
  epochs: Epochs,
  decide: (head: ConversationHead) => DomainEvent[],
): Promise<ConversationEvent[]> {
  return inTransaction(pool, conversation, async (client) => {
    const { rows } = await client.query<HeadRow & { epoch: string; partition: number }>(
      `SELECT c.key, c.head, c.partition, p.epoch
         FROM event_store.conversations c
         JOIN event_store.partition_owners p ON p.partition = c.partition
        WHERE c.key = $1
          FOR UPDATE OF c FOR SHARE OF p`,
      [conversation],
    );
    // No row: an unknown conversation, or a partition nobody owns yet — either way not ours.
    if (rows.length === 0) throw new FencedError(null, `${conversation} has no owned partition`);
    const [row] = rows;
    if (Number(row.epoch) !== epochs.get(row.partition)) {
      throw new FencedError(row.partition, `partition ${row.partition} is at epoch ${row.epoch}, this writer holds ${epochs.get(row.partition) ?? 'none'}`);
    }
    return writeEvents(client, [{ conversation, head: toHead(row), events: decide(toHead(row)) }]);
  });
}

/**
 * Appends to several conversations of one partition in one transaction (an ingested batch),
 * creating them on first sight, once the writer's epoch for the partition is checked. `decide`
 * sees each head and which of the `probe` once keys are stored already (the same input
 * delivered again); locks are taken in one order so batches never deadlock.
 */
export async function appendToConversations(
  pool: Pool,
  partition: number,
  epochs: Epochs,
  requests: readonly { conversation: string; probe: readonly string[] }[],
  decide: (conversation: string, head: ConversationHead, stored: ReadonlySet<string>) => DomainEvent[],
): Promise<ConversationEvent[]> {
  if (requests.length === 0) return [];
  const sorted = [...requests].sort((a, b) => (a.conversation < b.conversation ? -1 : 1));
  return inTransaction(pool, sorted[0].conversation, async (client) => {
    const owner = await client.query<{ epoch: string }>('SELECT epoch FROM event_store.partition_owners WHERE partition = $1 FOR SHARE', [partition]);
    if (owner.rows.length === 0 || Number(owner.rows[0].epoch) !== epochs.get(partition)) {
      throw new FencedError(partition, `partition ${partition} is at epoch ${owner.rows[0]?.epoch ?? 'none'}, this writer holds ${epochs.get(partition) ?? 'none'}`);
    }
    const heads = await client.query<HeadRow>(
      `INSERT INTO event_store.conversations (key, partition)
       SELECT k, $2 FROM unnest($1::text[]) AS k
       ON CONFLICT (key) DO UPDATE SET partition = EXCLUDED.partition
       RETURNING key, head`,
      [sorted.map((r) => r.conversation), partition],
    );
    const probed = await client.query<{ conversation: string; once_key: string }>(
      `SELECT conversation, once_key FROM event_store.events
        WHERE (conversation, once_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      [sorted.flatMap((r) => r.probe.map(() => r.conversation)), sorted.flatMap((r) => r.probe)],
    );
    const headOf = new Map(heads.rows.map((row) => [row.key, toHead(row)]));
    const storedOf = (conversation: string) =>
      new Set(probed.rows.filter((row) => row.conversation === conversation).map((row) => row.once_key));
    return writeEvents(
      client,
      sorted.map(({ conversation }) => {
        const head = headOf.get(conversation)!;
        return { conversation, head, events: decide(conversation, head, storedOf(conversation)) };
      }),
    );
  });
}

/** Inserts the events in order and updates each head by them, in one statement. */
async function writeEvents(client: PoolClient, writes: { conversation: string; head: ConversationHead; events: DomainEvent[] }[]) {
  const changed = writes.filter((w) => w.events.length > 0);
  if (changed.length === 0) return [];
  const events = changed.flatMap((w) => w.events.map((event) => ({ conversation: w.conversation, event })));
  const heads = changed.map((w) => ({ key: w.conversation, head: w.events.reduce(evolveHead, w.head) }));
  const { rows } = await client.query<EventRow>(
    `WITH inserted AS (
       INSERT INTO event_store.events (id, conversation, type, data, once_key)
       SELECT e.id, e.conversation, e.type, e.data, e.once_key
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS e(id, conversation, type, data, once_key, n)
        ORDER BY e.n
       RETURNING ${EVENT_COLUMNS}
     ), heads AS (
       UPDATE event_store.conversations c
          SET head = h.head
         FROM unnest($6::text[], $7::jsonb[]) AS h(key, head)
        WHERE c.key = h.key
     )
     SELECT * FROM inserted`,
    [
      events.map(() => randomUUID()),
      events.map((e) => e.conversation),
      events.map((e) => e.event.type),
      events.map((e) => storableJson(e.event.data)),
      events.map((e) => onceKey(e.event)),
      heads.map((h) => h.key),
      heads.map((h) => storableJson(h.head)),
    ],
  );
  return rows.sort((a, b) => Number(a.position) - Number(b.position)).map(toConversationEvent);
}

async function inTransaction<T>(pool: Pool, conversation: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (isUniqueViolation(error)) throw new AlreadyStoredError(conversation, String((error as { detail?: string }).detail ?? ''));
    throw error;
  } finally {
    client.release();
  }
}

const isUniqueViolation = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505';
