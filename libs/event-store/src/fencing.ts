import type { Pool } from '@rudder/runtime';

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
  const { rows } = await pool.query<{ partition: number; epoch: string }>(
    `WITH kept AS (
       SELECT partition, epoch FROM event_store.partition_owners
        WHERE owner = $2 AND (partition, epoch) IN (SELECT * FROM unnest($3::int[], $4::bigint[]))
     ), taken AS (
       INSERT INTO event_store.partition_owners (partition, epoch, owner)
       SELECT p, 1, $2 FROM unnest($1::int[]) AS p WHERE p NOT IN (SELECT partition FROM kept)
       ON CONFLICT (partition) DO UPDATE
          SET epoch = event_store.partition_owners.epoch + 1, owner = EXCLUDED.owner, taken_at = now()
       RETURNING partition, epoch
     )
     SELECT partition, epoch FROM kept UNION ALL SELECT partition, epoch FROM taken`,
    [sorted, owner, candidates, candidates.map((p) => held.get(p))],
  );
  return new Map(rows.map((r) => [r.partition, Number(r.epoch)]));
}
