import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { is, turnOf, watchEvents } from './events';
import { startBenchStack, type BenchStack, type Infra } from './stack';
import { median } from './stats';

/**
 * Benchmark 6: how a worker's cost grows with work. (a) Its resident memory after answering
 * one chat in each of `conversations` conversations, with idle conversations let go (after
 * 1 s) and kept (for an hour). (b) The first turn after a worker restart in a conversation with
 * `earlierTurns` earlier turns, against one in a new conversation (the fold reads the whole log).
 */
export type MemoryRun = { forgetMs: number; conversations: number; rssBeforeMb: number; rssAfterMb: number; kbPerConversation: number };
export type LongConversation = { earlierTurns: number; newConversationMs: number; longConversationMs: number };

const rssMbOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function chatAndWait(stack: BenchStack, key: string, id: string, text = 'hello'): Promise<number> {
  const watch = await watchEvents(stack.client, key);
  try {
    const start = performance.now();
    await stack.client.chat(key, { text, id });
    await watch.next(is.ended(await turnOf(watch, id)));
    return performance.now() - start;
  } finally {
    watch.close();
  }
}

export async function workerMemory(infra: Infra, options: { conversations: number; forgetMs: number[] }): Promise<MemoryRun[]> {
  const runs: MemoryRun[] = [];
  for (const forgetMs of options.forgetMs) {
    const stack = await startBenchStack(infra, { workers: 1, workerEnv: { WORKER_IDLE_FORGET_MS: String(forgetMs) } });
    try {
      const pid = stack.workers[0].child.pid!;
      for (let i = 0; i < 20; i++) await chatAndWait(stack, `mem/warm-${i}`, 'w');
      const rssBeforeMb = rssMbOf(pid);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < options.conversations; i = next++) await chatAndWait(stack, `mem/${forgetMs}-${i}`, 'm');
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(forgetMs, 10_000) + 11_000)); // the forgetting sweep runs
      const rssAfterMb = rssMbOf(pid);
      runs.push({ forgetMs, conversations: options.conversations, rssBeforeMb, rssAfterMb, kbPerConversation: ((rssAfterMb - rssBeforeMb) * 1024) / options.conversations });
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
    const longOnes: number[] = [];
    for (let run = 0; run < options.runs; run++) {
      // A new worker process each time: the first turn it runs folds the conversation's log.
      await restartWorker(stack);
      fresh.push(await chatAndWait(stack, `long/new-${run}`, 'n'));
      await restartWorker(stack);
      longOnes.push(await chatAndWait(stack, long, `after-restart-${run}`, 'after the restart'));
    }
    return { earlierTurns: options.earlierTurns, newConversationMs: median(fresh), longConversationMs: median(longOnes) };
  } finally {
    await stack.stop();
  }
}
