import { conversationsDue, nextDue } from '@rudder/event-store';
import type { Log, Pool, Sharded } from '@rudder/runtime';

/** A timer waits at most this long before it asks the store again (setTimeout's own limit is ~24.8 days). */
const LONGEST_WAIT_MS = 60 * 60 * 1000;

/**
 * Wakes the conversations of the owned partitions when something is due (their state's `dueAt`:
 * an approval timing out, a schedule's time, or the end of a `{debounceMs}` queue's hold),
 * without holding any of them: time is rows. One timer for the earliest deadline, found in the
 * store (`nextDue`) after each assignment and each firing, and moved earlier when this worker
 * learns of an earlier one (a write it stored, a conversation it folded). A woken
 * conversation's runner decides what is due under its lock (`decideDue`: timeouts and firings;
 * `startNextTurn` for a hold), so a deadline fires once however often it is woken, and one
 * missed while no worker owned its partition fires when the next owner takes it. With several
 * primaries, each is asked about the owned partitions it holds.
 */
export function createDeadlines(deps: {
  pools: Sharded<Pool>;
  owned(): readonly number[];
  poke(conversations: { conversation: string; partition: number }[]): void;
  log: Log;
}) {
  let timer: NodeJS.Timeout | undefined;
  let at = Infinity;
  let stopped = false;

  const arm = (when: number) => {
    if (stopped || when >= at) return;
    clearTimeout(timer);
    at = when;
    timer = setTimeout(() => void fire(), Math.min(Math.max(when - Date.now(), 0), LONGEST_WAIT_MS));
    timer.unref();
  };

  async function fire(): Promise<void> {
    at = Infinity;
    try {
      const shards = [...deps.pools.byShard(deps.owned())];
      const now = new Date();
      deps.poke((await Promise.all(shards.map(([shard, partitions]) => conversationsDue(deps.pools.all[shard], partitions, now)))).flat());
      const nexts = await Promise.all(shards.map(([shard, partitions]) => nextDue(deps.pools.all[shard], partitions)));
      const next = nexts.reduce<Date | null>((earliest, at) => (at && (!earliest || at < earliest) ? at : earliest), null);
      // What was poked is decided meanwhile; a deadline still passed is looked at again shortly.
      if (next) arm(Math.max(next.getTime(), Date.now() + 50));
      else arm(Date.now() + LONGEST_WAIT_MS);
    } catch (error) {
      deps.log.warn('reading what is due failed; retrying', { error: String(error) });
      arm(Date.now() + 1000);
    }
  }

  return {
    /** The partitions owned changed: look for what is due in them now. */
    rearm(): void {
      clearTimeout(timer);
      at = Infinity;
      void fire();
    },
    /** A write stored a deadline: wake at it, if it is earlier than the one waited for. */
    wakeAt(dueAt: string): void {
      arm(Date.parse(dueAt));
    },
    stop(): void {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
export type Deadlines = ReturnType<typeof createDeadlines>;
