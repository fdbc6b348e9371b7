import { performance } from 'node:perf_hooks';
import { FencedError, holdsEpoch, type Epochs } from '@rudder/event-store';
import type { Pool, Sharded } from '@rudder/runtime';

/**
 * The epochs this worker holds, when it last knew it held each partition's epoch (on a
 * monotonic clock), and the check a runner makes before a model request.
 *
 * A write checks the epoch in the database, so a write that succeeded proves the epoch was
 * held when it was sent (the clock is read before the write: a pause while it was in flight
 * counts as time unproven). A worker paused longer than its session timeout (SIGSTOP, a long
 * GC, a frozen VM) may have lost its partitions meanwhile, and when it resumes its runners
 * would ask the model before their next write is fenced, and before the rebalance that
 * releases them has run. So before a model request, when the last proof of the partition is
 * older than the session timeout, the epoch is read again: still held, the request goes on;
 * not held, `check` throws `FencedError` and nothing is sent. In a worker that was not paused
 * this costs a statement only when nothing was written on the partition for a session timeout
 * (a long tool call, say).
 */
export type HeldEpochs = {
  /** The epochs the worker holds now: every write is checked against them. */
  epochs(): Epochs;
  /** The monotonic clock, in milliseconds. */
  now(): number;
  /** A write under the worker's epoch of `partition`, sent at `at` (`now()`), succeeded. */
  proven(partition: number, at: number): void;
  /** Resolves when the epoch of `partition` is known held within the session timeout (reading it if need be); else throws FencedError. */
  check(partition: number): Promise<void>;
};

export function createHeldEpochs(options: {
  /** The event store's primaries: a partition's epoch is read on its own. */
  pools: Sharded<Pool>;
  /** The epochs the worker holds now. */
  epochs(): Epochs;
  /** Past this without a proof, the epoch is read again (the consumer group's session timeout). */
  sessionTimeoutMs: number;
  now?: () => number;
}): HeldEpochs {
  const now = options.now ?? (() => performance.now());
  const provenAt = new Map<number, number>();
  const proven = (partition: number, at: number) => {
    if (at > (provenAt.get(partition) ?? -Infinity)) provenAt.set(partition, at);
  };
  return {
    epochs: () => options.epochs(),
    now,
    proven,
    async check(partition) {
      const at = now();
      const since = at - (provenAt.get(partition) ?? -Infinity);
      if (since <= options.sessionTimeoutMs) return;
      const epoch = options.epochs().get(partition);
      if (epoch === undefined || !(await holdsEpoch(options.pools.forPartition(partition), partition, epoch))) {
        const unproven = Number.isFinite(since) ? `${Math.round(since)} ms` : 'ever';
        throw new FencedError(partition, `nothing proved epoch ${epoch ?? '(none)'} of partition ${partition} for ${unproven} (more than the session timeout), and it is no longer this worker's: no model request is sent`);
      }
      proven(partition, at);
    },
  };
}
