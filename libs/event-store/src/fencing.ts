import { isSessionLost, type Pool, type PoolClient } from '@rudder/runtime';

/** This process no longer owns the partition: another worker took a newer epoch. Nothing was written. */
export class FencedError extends Error {
  readonly code = 'fenced';
  constructor(readonly partition: number | null, detail: string) {
    super(`fenced: ${detail}`);
  }
}

/** The epochs a worker holds, by partition. */
export type Epochs = ReadonlyMap<number, number>;

/**
 * Takes the epochs of the partitions Kafka assigned to `owner` now. A partition in `held` (the
 * epochs this owner took for its previous assignment) whose row still names `owner` at that
 * epoch is kept as it is: nobody took it in between, because every owner takes an epoch before
 * it writes anything, so no write under another epoch happened and the in-flight writes of
 * this owner stay valid. Every other partition gets a new epoch: taking it waits for the writes
 * in flight under the old one (they hold a share lock on the row), and every write after it
 * that names an older epoch fails.
 *
 * Keeping reads the row without a lock: an owner that takes the partition right after is the
 * ordinary fencing case (its epoch is newer, this owner's writes fail from then on).
 */
export async function takePartitions(pool: Pool, partitions: readonly number[], owner: string, held: Epochs = new Map()): Promise<Map<number, number>> {
  if (partitions.length === 0) return new Map();
  const sorted = [...partitions].sort((a, b) => a - b);
  const candidates = sorted.filter((p) => held.has(p));
  const client = await pool.connect();
  client.on('error', ignore);
  let broken = false;
  try {
    // The update waits for the writes in flight under the old epochs, but not for ever: a
    // zombie paused inside its transaction is ended by the writers' idle timeout (write-transaction.ts),
    // and until then this gives up after EPOCH_LOCK_TIMEOUT_MS so the caller can retry (or stop
    // trying, once the assignment is no longer current).
    await client.query(`BEGIN; SET LOCAL lock_timeout = ${EPOCH_LOCK_TIMEOUT_MS}`);
    const rows = await takeEpochs(client, sorted, owner, candidates, held);
    // A partition grown off this primary (its row's moved_to) has no epoch taken: the whole take is refused.
    if (rows.length < sorted.length) {
      const moved = await client.query<{ partition: number; moved_to: number }>(
        'SELECT partition, moved_to FROM event_store.partition_owners WHERE partition = ANY($1::int[]) AND moved_to IS NOT NULL ORDER BY partition',
        [sorted],
      );
      throw new MovedPartitionError(moved.rows.map((r) => [r.partition, r.moved_to]));
    }
    await client.query('COMMIT');
    return new Map(rows.map((r) => [r.partition, Number(r.epoch)]));
  } catch (error) {
    broken = isSessionLost(error);
    await client.query('ROLLBACK').catch(() => undefined);
    if ((error as { code?: unknown } | null)?.code === '55P03') throw new PartitionBusyError(sorted, String(error));
    throw error;
  } finally {
    client.off('error', ignore);
    client.release(broken);
  }
}

const ignore = () => undefined;

/**
 * Whether `epoch` is still the partition's: no other owner took it since. A read, without a
 * lock: the answer may be outdated at once (an owner taking the partition right after), which
 * the epoch check of every write still catches; it is for a writer that was paused (past its
 * session, say) to learn, before it calls out again, that it was fenced meanwhile.
 */
export async function holdsEpoch(pool: Pool, partition: number, epoch: number): Promise<boolean> {
  const { rows } = await pool.query<{ epoch: string }>('SELECT epoch FROM event_store.partition_owners WHERE partition = $1', [partition]);
  return rows.length === 1 && Number(rows[0].epoch) === epoch;
}

/** How long taking epochs waits for the row locks of the writes in flight before it gives up (and is retried). */
export const EPOCH_LOCK_TIMEOUT_MS = 2000;

/**
 * A partition asked for was moved to another primary by growing the primaries
 * (scripts/grow-primaries.ts): this process runs with the map from before. Nothing was taken;
 * it must be restarted with the new DATABASE_URLS.
 */
export class MovedPartitionError extends Error {
  readonly code = 'partition_moved';
  constructor(readonly moved: readonly (readonly [partition: number, shard: number])[]) {
    super(
      `${moved.map(([partition, shard]) => `partition ${partition} was moved to shard ${shard}`).join(', ')} by growing the primaries: this process runs with the map from before; restart it with the new DATABASE_URLS`,
    );
  }
}

/** Taking the epochs waited too long for a write in flight under the old ones (a paused zombie, say); retry. */
export class PartitionBusyError extends Error {
  readonly code = 'partition_busy';
  constructor(readonly partitions: readonly number[], detail: string) {
    super(`partitions ${partitions.join(', ')} are still locked by a write in flight: ${detail}`);
  }
}

async function takeEpochs(client: PoolClient, sorted: number[], owner: string, candidates: number[], held: Epochs) {
  const { rows } = await client.query<{ partition: number; epoch: string }>(
    `WITH kept AS (
       SELECT partition, epoch FROM event_store.partition_owners
        WHERE owner = $2 AND moved_to IS NULL AND (partition, epoch) IN (SELECT * FROM unnest($3::int[], $4::bigint[]))
     ), taken AS (
       INSERT INTO event_store.partition_owners (partition, epoch, owner)
       SELECT p, 1, $2 FROM unnest($1::int[]) AS p WHERE p NOT IN (SELECT partition FROM kept)
       ON CONFLICT (partition) DO UPDATE
          SET epoch = event_store.partition_owners.epoch + 1, owner = EXCLUDED.owner, taken_at = now()
        WHERE event_store.partition_owners.moved_to IS NULL
       RETURNING partition, epoch
     )
     SELECT partition, epoch FROM kept UNION ALL SELECT partition, epoch FROM taken`,
    [sorted, owner, candidates, candidates.map((p) => held.get(p))],
  );
  return rows;
}
