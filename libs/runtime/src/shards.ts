import { Partitioners } from 'kafkajs';
import type { Config } from './config';

/**
 * Which PostgreSQL primary holds what (docs/operations.md, "Several PostgreSQL primaries"): N
 * primaries, shard i owning a fixed, equal, contiguous range of the `agent.inputs` partitions —
 * partition p belongs to shard floor(p × N / partitions). Every write of Rudder concerns one
 * conversation, and a conversation lives on one partition, so every transaction runs on one
 * shard. One primary (DATABASE_URL) is the map of one: the same code path.
 */
export type ShardMap = {
  /** The primaries' URLs, shard 0 first. */
  readonly urls: readonly string[];
  /** The partitions of `agent.inputs` (KAFKA_PARTITIONS). */
  readonly partitions: number;
  /** The shard that owns `partition`. */
  shardOf(partition: number): number;
  /** The partition kafkajs's default partitioner (Java's murmur2) puts `key` on: where the gateway sends a conversation's inputs. */
  partitionOfKey(key: string): number;
  /** The shard of `key`'s partition. */
  shardOfKey(key: string): number;
  /** `partitions`, grouped by their shard (only the shards with some). */
  byShard(partitions: Iterable<number>): Map<number, number[]>;
};

/** Something opened on every primary (a pool, a DataSource), and the one of a partition or a key. */
export type Sharded<T> = ShardMap & {
  /** One per shard, shard 0 first. */
  readonly all: readonly T[];
  forPartition(partition: number): T;
  forKey(key: string): T;
};

/** The primaries the configuration names: DATABASE_URLS (comma-separated) when set, else DATABASE_URL alone. */
export function databaseUrls(config: Pick<Config, 'DATABASE_URL' | 'DATABASE_URLS'>): string[] {
  return config.DATABASE_URLS ? splitUrls(config.DATABASE_URLS) : [config.DATABASE_URL];
}

/** DATABASE_URLS as a list: comma-separated, blanks around each ignored. */
export const splitUrls = (urls: string): string[] => urls.split(',').map((url) => url.trim()).filter((url) => url.length > 0);

/** Why `urls` cannot shard `partitions` partitions (none, repeated, more primaries than partitions), or null. */
export function shardMapProblem(urls: readonly string[], partitions: number): string | null {
  if (urls.length === 0) return 'no PostgreSQL primary named';
  if (new Set(urls).size !== urls.length) return 'a PostgreSQL primary is named twice';
  if (urls.length > partitions) return `${urls.length} primaries for ${partitions} partitions: each primary needs at least one partition`;
  return null;
}

/** The map of `urls` over `partitions` partitions; throws where `shardMapProblem` says why. */
export function shardMap(urls: readonly string[], partitions: number): ShardMap {
  const problem = shardMapProblem(urls, partitions);
  if (problem) throw new Error(problem);
  const count = urls.length;
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, partitionErrorCode: 0, leader: 0, replicas: [0], isr: [0] }));
  const shardOf = (partition: number) => {
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) throw new Error(`partition ${partition} is not one of the ${partitions}`);
    return Math.floor((partition * count) / partitions);
  };
  const partitionOfKey = (key: string) => partitioner({ topic: 'agent.inputs', partitionMetadata, message: { key, value: null } });
  return {
    urls: [...urls],
    partitions,
    shardOf,
    partitionOfKey,
    shardOfKey: (key) => shardOf(partitionOfKey(key)),
    byShard(owned) {
      const groups = new Map<number, number[]>();
      for (const partition of owned) {
        const shard = shardOf(partition);
        groups.set(shard, [...(groups.get(shard) ?? []), partition]);
      }
      return groups;
    },
  };
}

/** The configuration's map: `databaseUrls` over KAFKA_PARTITIONS. */
export const configuredShards = (config: Pick<Config, 'DATABASE_URL' | 'DATABASE_URLS' | 'KAFKA_PARTITIONS'>): ShardMap =>
  shardMap(databaseUrls(config), config.KAFKA_PARTITIONS);

/** `open` on every primary of `map` (or the given ones, one per shard), with the one of a partition or a key. */
export function sharded<T>(map: ShardMap, open: ((url: string, shard: number) => T) | readonly T[]): Sharded<T> {
  const all = typeof open === 'function' ? map.urls.map((url, shard) => open(url, shard)) : [...open];
  if (all.length !== map.urls.length) throw new Error(`${all.length} given for ${map.urls.length} shards`);
  return { ...map, all, forPartition: (partition) => all[map.shardOf(partition)], forKey: (key) => all[map.shardOfKey(key)] };
}

/** One primary holding all `partitions`: a pool given by hand (tests, benchmarks). */
export const oneShard = <T>(item: T, partitions: number): Sharded<T> => sharded(shardMap(['the one primary'], partitions), [item]);
