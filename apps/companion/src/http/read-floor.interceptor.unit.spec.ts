import type { ConversationEvent } from '@rudder/contracts';
import type { DataSource } from 'typeorm';
import { oneShard } from '@rudder/runtime';
import { describe, expect, it } from 'vitest';
import { FoldedPositions } from '../projection/folded-positions';
import { ReadFloorInterceptor } from './read-floor.interceptor';

/** A read model whose view of every conversation stays at position 0, counting its queries. */
function viewAtZero() {
  const queries = { findOne: 0, find: 0 };
  const readModels = {
    manager: {
      findOne: async () => (queries.findOne++, { position: 0 }),
      find: async () => (queries.find++, []),
    },
  } as unknown as DataSource;
  return { readModels: oneShard(readModels, 1), queries };
}

const folded = (conversation: string, position: number) => ({ conversation, position }) as ConversationEvent;
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ReadFloorInterceptor: reads waiting for their view, woken by this process’s folds', () => {
  it('wakes a read once a fold committed its conversation at its position or later, never for another conversation or an earlier position', async () => {
    const { readModels, queries } = viewAtZero();
    const folds = new FoldedPositions();
    // The shared poll every 10 minutes: only the folds can wake the reads here.
    const floor = new ReadFloorInterceptor(readModels, folds, 600_000);
    let woken = false;
    const read = (floor['reached'] as (key: string, min: number) => Promise<void>).call(floor, 'c', 7).then(() => (woken = true));
    await settle();
    folds.committed([folded('other', 9)]);
    folds.committed([folded('c', 6)]);
    folds.committed([]);
    await settle();
    expect(woken).toBe(false);
    folds.committed([folded('c', 5), folded('c', 8)]);
    await read;
    expect(woken).toBe(true);
    // The read's own first look, and no poll: the database said 0 throughout.
    expect(queries).toEqual({ findOne: 1, find: 0 });
    floor.onModuleDestroy();
  });

  it('of several reads of one conversation, wakes those whose floor the fold reached, and the others at a later fold', async () => {
    const { readModels } = viewAtZero();
    const folds = new FoldedPositions();
    const floor = new ReadFloorInterceptor(readModels, folds, 600_000);
    const reached = floor['reached'] as (key: string, min: number) => Promise<void>;
    const woken: number[] = [];
    const reads = [3, 5, 9].map((min) => reached.call(floor, 'c', min).then(() => woken.push(min)));
    await settle();
    folds.committed([folded('c', 5)]);
    await settle();
    expect(woken.sort()).toEqual([3, 5]);
    folds.committed([folded('c', 9)]);
    await Promise.all(reads);
    expect(woken).toEqual([3, 5, 9]);
    expect(floor['waiting'].size).toBe(0);
    floor.onModuleDestroy();
  });

  it('stops listening when the module is destroyed: a read still waiting is refused (503), later folds reach nobody', async () => {
    const { readModels } = viewAtZero();
    const folds = new FoldedPositions();
    const floor = new ReadFloorInterceptor(readModels, folds, 600_000);
    const read = (floor['reached'] as (key: string, min: number) => Promise<void>).call(floor, 'c', 3);
    await settle();
    floor.onModuleDestroy();
    await expect(read).rejects.toMatchObject({ code: 'unavailable' });
    expect(folds['listeners'].size).toBe(0);
  });
});
