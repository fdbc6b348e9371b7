import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { readConfig } from './config';
import { databaseUrls, shardMap, sharded } from './shards';

const urls = ['postgres://a/db', 'postgres://b/db', 'postgres://c/db'];

describe('shardMap: partition p belongs to shard floor(p × N / partitions)', () => {
  it('gives each primary a fixed, equal, contiguous range of partitions', () => {
    const map = shardMap(urls, 6);
    expect(Array.from({ length: 6 }, (_, p) => map.shardOf(p))).toEqual([0, 0, 1, 1, 2, 2]);
    expect(Array.from({ length: 12 }, (_, p) => shardMap(urls, 12).shardOf(p))).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    // Uneven: the ranges differ by one partition at most, still contiguous.
    expect(Array.from({ length: 7 }, (_, p) => shardMap(urls, 7).shardOf(p))).toEqual([0, 0, 0, 1, 1, 2, 2]);
    expect(() => map.shardOf(6)).toThrow(/not one of the 6/);
  });

  it('puts a key on the partition kafkajs\'s default partitioner chooses for it, and on that partition\'s shard', () => {
    const map = shardMap(urls, 6);
    const partitioner = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: 6 }, (_, partitionId) => ({ partitionId, partitionErrorCode: 0, leader: 0, replicas: [0], isr: [0] }));
    const keys = Array.from({ length: 200 }, (_, i) => `conversation-${i}`);
    for (const key of keys) {
      const partition = partitioner({ topic: 'agent.inputs', partitionMetadata, message: { key, value: null } });
      expect(map.partitionOfKey(key)).toBe(partition);
      expect(map.shardOfKey(key)).toBe(map.shardOf(partition));
    }
    // Every shard gets some of them.
    expect(new Set(keys.map(map.shardOfKey))).toEqual(new Set([0, 1, 2]));
  });

  it('groups partitions by shard, and picks what was opened on each', () => {
    const map = shardMap(urls, 6);
    expect(map.byShard([5, 0, 2, 1])).toEqual(new Map([[2, [5]], [0, [0, 1]], [1, [2]]]));
    const opened = sharded(map, (url, shard) => `${shard}:${url}`);
    expect(opened.all).toEqual(['0:postgres://a/db', '1:postgres://b/db', '2:postgres://c/db']);
    expect(opened.forPartition(3)).toBe('1:postgres://b/db');
    expect(opened.forKey('k')).toBe(opened.all[map.shardOfKey('k')]);
  });

  it('refuses no primary, a primary named twice, and more primaries than partitions', () => {
    expect(() => shardMap([], 6)).toThrow(/no PostgreSQL primary/);
    expect(() => shardMap(['postgres://a/db', 'postgres://a/db'], 6)).toThrow(/named twice/);
    expect(() => shardMap(urls, 2)).toThrow(/3 primaries for 2 partitions/);
  });
});

describe('the configuration of the primaries', () => {
  const env = { KAFKA_BROKERS: 'localhost:9092', KAFKA_PARTITIONS: '6' };

  it('is DATABASE_URL alone by default: the map of one', () => {
    const config = readConfig({ ...env, DATABASE_URL: 'postgres://one/db' });
    expect(databaseUrls(config)).toEqual(['postgres://one/db']);
    expect(shardMap(databaseUrls(config), 6).shardOf(5)).toBe(0);
  });

  it('is DATABASE_URLS when set, DATABASE_URL then its first unless given', () => {
    const config = readConfig({ ...env, DATABASE_URLS: ' postgres://a/db, postgres://b/db ,postgres://c/db' });
    expect(databaseUrls(config)).toEqual(urls);
    expect(config.DATABASE_URL).toBe('postgres://a/db');
  });

  it('refuses DATABASE_URLS that cannot shard the partitions, saying why', () => {
    expect(() => readConfig({ ...env, DATABASE_URLS: 'postgres://a/db,postgres://a/db' })).toThrow(/DATABASE_URLS: a PostgreSQL primary is named twice/);
    expect(() => readConfig({ ...env, KAFKA_PARTITIONS: '2', DATABASE_URLS: urls.join(',') })).toThrow(/DATABASE_URLS: 3 primaries for 2 partitions/);
    expect(() => readConfig({ ...env, DATABASE_URL: 'postgres://one/db', DATABASE_URLS: ' , ' })).toThrow(/DATABASE_URLS: no PostgreSQL primary named/);
  });
});
