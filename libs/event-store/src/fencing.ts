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
 * Takes a new epoch for each partition Kafka assigned to `owner`. It waits for the writes
 * in flight under the old epochs (they hold a share lock on the row), and every write after
 * it that names an older epoch fails. Taken again on every assignment, even for a partition
 * the worker had before: it cannot tell whether another owner held it in between.
 */
export async function takePartitions(pool: Pool, partitions: readonly number[], owner: string): Promise<Map<number, number>> {
  if (partitions.length === 0) return new Map();
  const { rows } = await pool.query<{ partition: number; epoch: string }>(
    `INSERT INTO event_store.partition_owners (partition, epoch, owner)
     SELECT p, 1, $2 FROM unnest($1::int[]) AS p
     ON CONFLICT (partition) DO UPDATE
        SET epoch = event_store.partition_owners.epoch + 1, owner = EXCLUDED.owner, taken_at = now()
     RETURNING partition, epoch`,
    [[...partitions].sort((a, b) => a - b), owner],
  );
  return new Map(rows.map((r) => [r.partition, Number(r.epoch)]));
}
