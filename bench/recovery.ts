import { performance } from 'node:perf_hooks';
import { is, turnOf, watchEvents } from './events';
import { startBenchStack, type Infra } from './stack';
import { median } from './stats';

/** The tool the killed worker is in the middle of; the successor runs it again from the start. */
export const TOOL_MS = 2000;

/**
 * Benchmark 4: a turn is in a `wait 2000` tool call when its worker is SIGKILLed and another
 * is started at once. Measured from the kill: the successor owning the partitions (the dead
 * member must first be dropped from the group at its session timeout; the successor's boot
 * overlaps that wait), and the turn's next committed event on the stream (the tool's result,
 * after the tool ran again from the start).
 */
export type RecoveryResult = {
  sessionTimeoutMs: number;
  runs: number;
  /** Kill to the successor's assignment, per run (ms). */
  assigned: number[];
  /** Kill to the next committed event on the stream, per run (ms). */
  nextEvent: number[];
  median: { assigned: number; nextEvent: number; afterAssigned: number };
  /** Spawn to assignment of the first worker, into an empty group: what a restart costs without the wait. */
  bootMs: number;
};

export async function recovery(infra: Infra, options: { sessionTimeoutMs: number; runs: number }): Promise<RecoveryResult> {
  const stack = await startBenchStack(infra, {
    workers: 0,
    workerEnv: { WORKER_SESSION_TIMEOUT_MS: String(options.sessionTimeoutMs), WORKER_HEARTBEAT_MS: '500' },
  });
  const assigned: number[] = [];
  const nextEvent: number[] = [];
  let bootMs = Number.NaN;
  try {
    const spawned = performance.now();
    let worker = stack.spawnWorker();
    bootMs = (await worker.ready) - spawned;
    for (let run = 0; run < options.runs; run++) {
      const key = `recovery/${options.sessionTimeoutMs}-${run}`;
      const watch = await watchEvents(stack.client, key);
      try {
        await stack.client.chat(key, { text: `wait ${TOOL_MS}`, id: 'p' });
        const turn = await turnOf(watch, 'p');
        const toolStarted = await watch.next(is.toolStarted(turn));
        const killed = performance.now();
        await worker.kill('SIGKILL');
        worker = stack.spawnWorker();
        // The next event stored after the kill: nothing is stored while no worker owns the turn.
        const next = await watch.next((e) => e.position > toolStarted.event.position && e.type !== 'input.accepted');
        assigned.push((await worker.ready) - killed);
        nextEvent.push(next.arrived - killed);
        await watch.next(is.ended(turn));
      } finally {
        watch.close();
      }
    }
  } finally {
    await stack.stop();
  }
  const afterAssigned = nextEvent.map((n, i) => n - assigned[i]);
  return {
    sessionTimeoutMs: options.sessionTimeoutMs,
    runs: options.runs,
    assigned,
    nextEvent,
    median: { assigned: median(assigned), nextEvent: median(nextEvent), afterAssigned: median(afterAssigned) },
    bootMs,
  };
}
