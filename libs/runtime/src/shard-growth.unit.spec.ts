import { describe, expect, it } from 'vitest';
import { growthProblem, planGrowth } from './shard-growth';
import { shardMap } from './shards';

const a = 'postgres://a/db';
const b = 'postgres://b/db';
const c = 'postgres://c/db';
const d = 'postgres://d/db';

describe('planGrowth: which partitions move where when the primaries grow from N to M', () => {
  it('moves, from two primaries to three over six partitions, partition 2 from shard 0 to 1 and 4, 5 from shard 1 to 2', () => {
    const plan = planGrowth([a, b], [a, b, c], 6);
    expect(plan.moves).toEqual([
      { partition: 2, source: 0, destination: 1 },
      { partition: 4, source: 1, destination: 2 },
      { partition: 5, source: 1, destination: 2 },
    ]);
    expect(plan.routes).toEqual([
      { source: 0, destination: 1, partitions: [2] },
      { source: 1, destination: 2, partitions: [4, 5] },
    ]);
  });

  it('moves exactly the partitions whose shard differs between the two maps, each to a higher shard', () => {
    for (const [from, to, partitions] of [
      [[a], [a, b], 3],
      [[a], [a, b, c, d], 8],
      [[a, b], [a, b, c], 3],
      [[a, b], [a, b, c, d], 12],
      [[a, b, c], [a, b, c, d], 7],
    ] as const) {
      const plan = planGrowth(from, to, partitions);
      const before = shardMap(from, partitions);
      const after = shardMap(to, partitions);
      const expected = Array.from({ length: partitions }, (_, p) => ({ partition: p, source: before.shardOf(p), destination: after.shardOf(p) })).filter(
        (m) => m.source !== m.destination,
      );
      expect(plan.moves).toEqual(expected);
      expect(plan.moves.length).toBeGreaterThan(0);
      for (const move of plan.moves) expect(move.destination).toBeGreaterThan(move.source);
      // Every move is in exactly one route, of its own source and destination.
      expect(plan.routes.flatMap((r) => r.partitions.map((partition) => ({ partition, source: r.source, destination: r.destination }))).sort((x, y) => x.partition - y.partition)).toEqual(
        expected,
      );
    }
  });

  it('from one primary to two over three partitions: partition 2 goes, 1 stays (floor(1 × 2 / 3) is 0)', () => {
    expect(planGrowth([a], [a, b], 3).moves).toEqual([{ partition: 2, source: 0, destination: 1 }]);
    expect(planGrowth([a], [a, b], 4).moves).toEqual([
      { partition: 2, source: 0, destination: 1 },
      { partition: 3, source: 0, destination: 1 },
    ]);
  });

  it('refuses what is not a growth of the same primaries, in the same order, over partitions enough', () => {
    expect(growthProblem([a, b], [a, b, c], 6)).toBeNull();
    expect(growthProblem([a, b], [b, a, c], 6)).toMatch(/must start with --from in the same order \(shard 0 is postgres:\/\/a\/db before, postgres:\/\/b\/db after\)/);
    expect(growthProblem([a, b], [a, c, d], 6)).toMatch(/must start with --from/);
    expect(growthProblem([a, b], [a, b], 6)).toMatch(/growing needs more/);
    expect(growthProblem([a, b, c], [a, b], 6)).toMatch(/growing needs more/);
    expect(growthProblem([a, b], [a, b, c, d], 3)).toMatch(/after \(--to\): 4 primaries for 3 partitions/);
    expect(growthProblem([a, b], [a, b, a], 6)).toMatch(/after \(--to\): a PostgreSQL primary is named twice/);
    expect(growthProblem([], [a], 6)).toMatch(/before \(--from\): no PostgreSQL primary named/);
    expect(() => planGrowth([a, b], [b, a, c], 6)).toThrow(/same order/);
  });
});
