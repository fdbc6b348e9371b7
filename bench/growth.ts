import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/system';
import { sample, scrape } from '../test/prometheus';
import { is, turnOf, watchEvents } from './events';
import { startBenchStack, type BenchStack, type Infra } from './stack';
import { median } from './stats';

/**
 * Benchmark 6: how a worker's cost grows with work. (a) Its heap after a full garbage
 * collection, and the conversations it holds folded, as it answers one chat in each of more and
 * more conversations, with idle conversations let go (after 1 s) and kept (for an hour): kB per
 * conversation is the slope between the last two readings. (b) The first turn after a worker restart in a conversation with
 * `earlierTurns` earlier turns, against one in a new conversation (the fold reads the whole log).
 */
export type MemoryPoint = { conversations: number; held: number; heapMb: number };
export type MemoryRun = { forgetMs: number; points: MemoryPoint[]; kbPerConversation: number };
export type LongConversation = {
  earlierTurns: number;
  /** The first turn a new worker process runs, in a new conversation and in the long one. */
  newConversationMs: number;
  longConversationMs: number;
  /** The turn right after it, by the same worker (the fold held): what is left is the history the model request carries. */
  newConversationNextMs: number;
  longConversationNextMs: number;
  /** Median of each run's own long / new ratio (the two measured one right after the other: steadier than a ratio of medians on a machine that drifts). */
  firstRatio: number;
  nextRatio: number;
  /** The long conversation's snapshot as stored (its fold as JSON), kB: what a first read after a restart loads. */
  snapshotKb: number;
};

const GC_PRELOAD = fileURLToPath(new URL('gc-on-signal.cjs', import.meta.url));

async function chatAndWait(stack: BenchStack, key: string, id: string, text = 'hello'): Promise<number> {
  const watch = await watchEvents(stack.client, key);
  try {
    const start = performance.now();
    await stack.client.chat(key, { text, id });
    await watch.next(is.ended(await turnOf(watch, id)));
    return performance.now() - start;
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}; ${await whereTheTurnIs(stack, key)}`);
  } finally {
    watch.close();
  }
}

/** The worker's heap after a full collection (SIGUSR2 to its preload), and the conversations it holds. */
async function measure(stack: BenchStack, metricsUrl: string, conversations: number): Promise<MemoryPoint> {
  const worker = stack.workers[0];
  const collected = () => worker.output().split('bench: garbage collected').length;
  const before = collected();
  worker.child.kill('SIGUSR2');
  await until(() => collected() > before);
  const text = await scrape(metricsUrl);
  return { conversations, held: sample(text, 'rudder_conversations_held'), heapMb: sample(text, 'nodejs_heap_size_used_bytes') / 2 ** 20 };
}

async function until(done: () => boolean | Promise<boolean>, timeoutMs = 60_000) {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error('bench: waited too long');
    await sleep(100);
  }
}

export async function workerMemory(infra: Infra, options: { checkpoints: number[]; forgetMs: number[] }): Promise<MemoryRun[]> {
  const runs: MemoryRun[] = [];
  for (const forgetMs of options.forgetMs) {
    const port = await freePort();
    const metricsUrl = `http://127.0.0.1:${port}/metrics`;
    const stack = await startBenchStack(infra, {
      workers: 1,
      workerEnv: { WORKER_IDLE_FORGET_MS: String(forgetMs), METRICS_PORT: String(port), NODE_OPTIONS: `--expose-gc --require ${GC_PRELOAD}` },
    });
    try {
      for (let i = 0; i < 20; i++) await chatAndWait(stack, `mem/warm-${i}`, 'w');
      const settled = async () => forgetMs > 60_000 || sample(await scrape(metricsUrl), 'rudder_conversations_held') === 0;
      await until(settled);
      const points = [await measure(stack, metricsUrl, 0)];
      let next = 0;
      for (const checkpoint of options.checkpoints) {
        await Promise.all(
          Array.from({ length: 16 }, async () => {
            for (let i = next++; i < checkpoint; i = next++) await chatAndWait(stack, `mem/${forgetMs}-${i}`, 'm');
          }),
        );
        next = checkpoint;
        await until(settled); // idle ones let go (the sweep runs every min(forgetMs, 10 s))
        points.push(await measure(stack, metricsUrl, checkpoint));
      }
      // The slope between the last two readings: the first conversations also warm the JIT
      // and fill the worker's bounded caches (event ids and turns its metrics count once).
      const [before, last] = points.slice(-2);
      runs.push({ forgetMs, points, kbPerConversation: ((last.heapMb - before.heapMb) * 1024) / (last.conversations - before.conversations) });
    } finally {
      await stack.stop();
    }
  }
  return runs;
}

/** Stops the running worker (SIGTERM, it leaves the group at once) and waits for a new one to own the partitions. */
async function restartWorker(stack: BenchStack) {
  await stack.workers.at(-1)!.kill('SIGTERM');
  await stack.startWorker();
}

export async function longConversation(infra: Infra, options: { earlierTurns: number; runs: number }): Promise<LongConversation> {
  const stack = await startBenchStack(infra, { workers: 1 });
  try {
    const long = 'long/conversation';
    for (let t = 0; t < options.earlierTurns; t++) await chatAndWait(stack, long, `earlier-${t}`, `turn ${t}`);
    const fresh: number[] = [];
    const freshNext: number[] = [];
    const longOnes: number[] = [];
    const longNext: number[] = [];
    for (let run = 0; run < options.runs; run++) {
      // A new worker process each time: the first turn it runs folds the conversation's log.
      await restartWorker(stack);
      fresh.push(await chatAndWait(stack, `long/new-${run}`, 'n'));
      freshNext.push(await chatAndWait(stack, `long/new-${run}`, `next-${run}`, 'and then'));
      await restartWorker(stack);
      longOnes.push(await chatAndWait(stack, long, `after-restart-${run}`, 'after the restart'));
      longNext.push(await chatAndWait(stack, long, `after-restart-next-${run}`, 'and then'));
    }
    return {
      snapshotKb: await snapshotKb(stack, long),
      earlierTurns: options.earlierTurns,
      newConversationMs: median(fresh),
      longConversationMs: median(longOnes),
      newConversationNextMs: median(freshNext),
      longConversationNextMs: median(longNext),
      firstRatio: median(longOnes.map((ms, i) => ms / fresh[i]!)),
      nextRatio: median(longNext.map((ms, i) => ms / freshNext[i]!)),
    };
  } finally {
    await stack.stop();
  }
}

/** For a turn its stream did not show: what the event store holds of the conversation, and the workers' last output. */
async function whereTheTurnIs(stack: BenchStack, conversation: string): Promise<string> {
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  try {
    const { rows } = await db.query<{ position: string; type: string }>('SELECT position, type FROM event_store.events WHERE conversation = $1 ORDER BY position', [conversation]);
    const stored = rows.map((r) => `${r.position} ${r.type}`).join(', ') || 'nothing';
    return `the event store holds: ${stored}; the workers' last output:\n${stack.workers.map((w) => w.output().slice(-2000)).join('\n---\n')}`;
  } catch (error) {
    return `the event store could not be read: ${String(error)}`;
  } finally {
    await db.end().catch(() => undefined);
  }
}

async function snapshotKb(stack: BenchStack, conversation: string): Promise<number> {
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  try {
    const { rows } = await db.query<{ bytes: number }>('SELECT octet_length(fold::text) AS bytes FROM event_store.snapshots WHERE conversation = $1', [conversation]);
    return (rows[0]?.bytes ?? 0) / 1024;
  } finally {
    await db.end();
  }
}
