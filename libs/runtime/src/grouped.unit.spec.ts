import { describe, expect, it } from 'vitest';
import { grouped } from './grouped';

/** A `run` that records each group it got and finishes only when told to. */
function recordingRun() {
  const groups: number[][] = [];
  const finishers: ((fail?: Error) => void)[] = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      groups.push(items);
      finishers.push((fail) => (fail ? reject(fail) : resolve(items.map((n) => `done ${n}`))));
    });
  const finish = async (fail?: Error) => {
    finishers.shift()!(fail);
    await new Promise((r) => setImmediate(r));
  };
  return { run, groups, finish };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('grouped', () => {
  it('runs the items handed over in the same turn of the event loop together, each caller getting its own result', async () => {
    const { run, groups, finish } = recordingRun();
    const hand = grouped(run);
    const answers = Promise.all([hand(1), hand(2), hand(3)]);
    await tick();
    expect(groups).toEqual([[1, 2, 3]]);
    await finish();
    expect(await answers).toEqual(['done 1', 'done 2', 'done 3']);
  });

  it('keeps one run in flight; what arrives meanwhile goes together into the next', async () => {
    const { run, groups, finish } = recordingRun();
    const hand = grouped(run);
    const first = hand(1);
    await tick();
    const later = [hand(2), hand(3)];
    await tick();
    expect(groups).toEqual([[1]]);
    await finish();
    expect(await first).toBe('done 1');
    expect(groups).toEqual([[1], [2, 3]]);
    await finish();
    expect(await Promise.all(later)).toEqual(['done 2', 'done 3']);
    // Quiet again: the next item starts a run of its own.
    const alone = hand(4);
    await tick();
    expect(groups).toEqual([[1], [2, 3], [4]]);
    await finish();
    expect(await alone).toBe('done 4');
  });

  it('rejects every item of a failed run with its error, and goes on with the items after it', async () => {
    const { run, groups, finish } = recordingRun();
    const hand = grouped(run);
    const failing = [hand(1), hand(2)].map((p) => p.then(() => 'resolved', (e: Error) => e.message));
    await tick();
    const after = hand(3);
    await finish(new Error('database away'));
    expect(await Promise.all(failing)).toEqual(['database away', 'database away']);
    expect(groups).toEqual([[1, 2], [3]]);
    await finish();
    expect(await after).toBe('done 3');
  });

  it('bounds a run by the items\' sizes, taking them in order and always at least one', async () => {
    const { run, groups, finish } = recordingRun();
    const hand = grouped(run, { most: 10, size: (n) => n });
    const all = Promise.all([hand(4), hand(5), hand(2), hand(12), hand(3)]);
    await tick();
    expect(groups).toEqual([[4, 5]]);
    await finish();
    expect(groups).toEqual([[4, 5], [2]]);
    await finish();
    expect(groups).toEqual([[4, 5], [2], [12]]);
    await finish();
    await finish();
    expect(groups).toEqual([[4, 5], [2], [12], [3]]);
    expect(await all).toEqual(['done 4', 'done 5', 'done 2', 'done 12', 'done 3']);
  });

  it('rejects a run that answers for fewer items than it was given', async () => {
    const hand = grouped(async (items: number[]) => items.slice(1));
    const results = await Promise.allSettled([hand(1), hand(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
