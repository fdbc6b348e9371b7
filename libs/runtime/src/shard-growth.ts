import { shardMap, shardMapProblem } from './shards';

/**
 * Growing from N to M PostgreSQL primaries (scripts/grow-primaries.ts; docs/operations.md,
 * "Growing from N to M primaries"): which partitions move where. The new list starts with the
 * old one, in the same order, so shard i keeps its URL; partition p goes from shard
 * floor(p × N / P) to floor(p × M / P), which is never lower (M > N), so a partition only ever
 * moves to a primary it never lived on, and most stay where they are.
 */
export type PartitionMove = {
  partition: number;
  /** Its shard, and primary, before: in `from`. */
  source: number;
  /** Its shard, and primary, after: in `to`. */
  destination: number;
};

/** The partitions that go from one primary to another: one copy (one transaction) each. */
export type GrowthRoute = { source: number; destination: number; partitions: number[] };

export type GrowthPlan = {
  partitions: number;
  from: readonly string[];
  to: readonly string[];
  /** Every partition whose shard changes, in partition order. */
  moves: PartitionMove[];
  /** The moves grouped by (source, destination), in that order. */
  routes: GrowthRoute[];
};

/** Why growing from `from` to `to` over `partitions` partitions cannot be done, or null. */
export function growthProblem(from: readonly string[], to: readonly string[], partitions: number): string | null {
  const before = shardMapProblem(from, partitions);
  if (before) return `the primaries before (--from): ${before}`;
  const after = shardMapProblem(to, partitions);
  if (after) return `the primaries after (--to): ${after}`;
  if (to.length <= from.length) return `--to names ${to.length} primaries, --from ${from.length}: growing needs more`;
  const changed = from.findIndex((url, i) => to[i] !== url);
  if (changed >= 0) return `--to must start with --from in the same order (shard ${changed} is ${from[changed]} before, ${to[changed]} after): a shard keeps its primary`;
  return null;
}

/** The moves of growing from `from` to `to`; throws where `growthProblem` says why. */
export function planGrowth(from: readonly string[], to: readonly string[], partitions: number): GrowthPlan {
  const problem = growthProblem(from, to, partitions);
  if (problem) throw new Error(problem);
  const before = shardMap(from, partitions);
  const after = shardMap(to, partitions);
  const moves: PartitionMove[] = [];
  for (let partition = 0; partition < partitions; partition++) {
    const source = before.shardOf(partition);
    const destination = after.shardOf(partition);
    if (source !== destination) moves.push({ partition, source, destination });
  }
  const routes: GrowthRoute[] = [];
  for (const move of moves) {
    const route = routes.find((r) => r.source === move.source && r.destination === move.destination);
    if (route) route.partitions.push(move.partition);
    else routes.push({ source: move.source, destination: move.destination, partitions: [move.partition] });
  }
  routes.sort((a, b) => a.source - b.source || a.destination - b.destination);
  return { partitions, from: [...from], to: [...to], moves, routes };
}
