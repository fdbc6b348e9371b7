import type { Pool, Sharded } from '@rudder/runtime';
import { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from './outbox-relay';
import type { Written } from './writes';

/** The outbox relays of several primaries as one: a commit goes to the relay of its partition's primary. */
export type ShardedRelay = Omit<OutboxRelay, 'enqueue'> & {
  /** A commit just made on the primary of `partition` (`OutboxRelay.enqueue`). */
  enqueue(commit: Written, partition: number): void;
};

/**
 * A relay per primary (`createOutboxRelay`), each publishing the outbox of the owned partitions
 * that primary holds: a relay reads and marks one database, so nothing it does spans two.
 * Publications of different primaries are not ordered with each other; those of a conversation
 * (one partition, one primary) stay in log order.
 */
export function createShardedRelay(pools: Sharded<Pool>, options: Omit<OutboxRelayOptions, 'pool'>): ShardedRelay {
  const relays = pools.all.map((pool, shard) =>
    createOutboxRelay({ ...options, pool, ownedPartitions: () => options.ownedPartitions().filter((partition) => pools.shardOf(partition) === shard) }),
  );
  return {
    enqueue: (commit, partition) => relays[pools.shardOf(partition)].enqueue(commit),
    sweep: () => relays.forEach((relay) => relay.sweep()),
    idle: () => Promise.all(relays.map((relay) => relay.idle())).then(() => undefined),
    stop: () => Promise.all(relays.map((relay) => relay.stop())).then(() => undefined),
  };
}
