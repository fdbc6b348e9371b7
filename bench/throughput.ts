import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { turnOf, is, watchEvents } from './events';
import { startBenchStack, type Infra } from './stack';
import { median } from './stats';

/**
 * Benchmark 5: throughput at saturation, and how it grows with turn workers. 16 conversations
 * send one-tool turns (`wait 0`) in a closed loop for `seconds`, with 1, 2 and 3 worker
 * processes. CPU is read from /proc for each worker and for this process (gateway, companion,
 * scripted model and the load generator share it), per answered turn. `workerEntry`: a worker of
 * another agent's (a framework's, benchmark 7).
 */
export type ThroughputLevel = {
  workers: number;
  /** PostgreSQL primaries the level ran on. */
  databases: number;
  turns: number;
  turnsPerSecond: number;
  p50: number;
  /** CPU milliseconds per answered turn: all workers together, and this process. */
  cpuMsPerTurn: { workers: number; benchProcess: number };
};

const CLOCK_TICKS_PER_MS = 100 / 1000; // USER_HZ = 100 on Linux

/** User + system CPU milliseconds a process has used so far. */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_MS;
}

export async function throughput(
  infra: Infra,
  options: { workers: number[]; conversations: number; seconds: number; workerEntry?: string; databases?: number },
): Promise<ThroughputLevel[]> {
  const levels: ThroughputLevel[] = [];
  const databases = options.databases ?? 1;
  for (const workers of options.workers) {
    const stack = await startBenchStack(infra, { workers, workerEntry: options.workerEntry, databases });
    try {
      const keys = Array.from({ length: options.conversations }, (_, i) => `load/w${workers}-d${databases}-${i}`);
      const watches = await Promise.all(keys.map((key) => watchEvents(stack.client, key)));
      const oneTurn = async (i: number, id: string) => {
        const started = performance.now();
        await stack.client.chat(keys[i], { text: 'wait 0', id });
        await watches[i].next(is.ended(await turnOf(watches[i], id)));
        return performance.now() - started;
      };
      try {
        await Promise.all(keys.map(async (_, i) => { for (let t = 0; t < 3; t++) await oneTurn(i, `warm-${t}`); }));
        const pids = stack.workers.map((w) => w.child.pid!);
        const cpu = () => ({ workers: pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0), bench: cpuMsOf(process.pid) });
        const before = cpu();
        const start = performance.now();
        const deadline = start + options.seconds * 1000;
        const latencies: number[] = [];
        await Promise.all(
          keys.map(async (_, i) => {
            for (let t = 0; performance.now() < deadline; t++) latencies.push(await oneTurn(i, `t${t}`));
          }),
        );
        const seconds = (performance.now() - start) / 1000;
        const after = cpu();
        const turns = latencies.length;
        levels.push({
          workers,
          databases,
          turns,
          turnsPerSecond: turns / seconds,
          p50: median(latencies),
          cpuMsPerTurn: { workers: (after.workers - before.workers) / turns, benchProcess: (after.bench - before.bench) / turns },
        });
      } finally {
        for (const watch of watches) watch.close();
      }
    } finally {
      await stack.stop();
    }
  }
  return levels;
}
