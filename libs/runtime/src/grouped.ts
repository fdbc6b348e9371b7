/**
 * Group commit: `grouped(run)` returns a function that hands one item to `run` and resolves with
 * that item's result, where `run` takes many items at once. At most one `run` is in flight; the
 * items handed over while it runs wait for it and then go together into the next one. The first
 * item after a quiet spell waits one turn of the event loop (`setImmediate`, no timer) for the
 * items handed over with it (kafkajs starts a fetch's partition batches together), so a quiet
 * system waits for nothing and a busy one makes one run of what would have been many.
 *
 * `run` returns one result per item, in the items' order. If it throws, every item of that run
 * is rejected with its error (each caller retries its own); the next run goes on with the items
 * that came after.
 *
 * `most` bounds a run: it takes the waiting items in order while their `size`s add up to at
 * most that (always at least one item); the rest wait for the next run.
 */
export function grouped<T, R>(
  run: (items: T[]) => Promise<R[]>,
  bound: { most: number; size: (item: T) => number } = { most: Infinity, size: () => 1 },
): (item: T) => Promise<R> {
  type Waiting = { item: T; resolve: (result: R) => void; reject: (error: unknown) => void };
  let waiting: Waiting[] = [];
  let draining = false;

  const drain = async () => {
    while (waiting.length > 0) {
      let taken = 1;
      for (let total = bound.size(waiting[0].item); taken < waiting.length; taken++) {
        total += bound.size(waiting[taken].item);
        if (total > bound.most) break;
      }
      const group = waiting.slice(0, taken);
      waiting = waiting.slice(taken);
      try {
        const results = await run(group.map((w) => w.item));
        if (results.length !== group.length) throw new Error(`grouped: ${results.length} results for ${group.length} items`);
        group.forEach((w, i) => w.resolve(results[i]));
      } catch (error) {
        for (const w of group) w.reject(error);
      }
    }
    draining = false;
  };

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (draining) return;
      draining = true;
      setImmediate(() => void drain());
    });
}
