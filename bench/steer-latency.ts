import { performance } from 'node:perf_hooks';
import { is, turnOf, watchEvents } from './events';
import { startBenchStack, type Infra } from './stack';
import { median, percentile } from './stats';

/**
 * Benchmark 2: a turn calls `wait 1000`; as soon as its tool.started is on the stream, a steer
 * is sent. Measured from POST steer: its 200 answer (the worker's decision, steer.accepted,
 * relayed by the gateway), and its steer.taken on the stream (taken at the step after the
 * tool, so mostly the rest of the tool's second). Also tool.ended to steer.taken on the
 * stream: what taking a steer adds once the tool is done. Runs one at a time.
 */
export type SteerResult = {
  runs: number;
  landed: number;
  answer: { p50: number; p95: number };
  taken: { p50: number; p95: number };
  afterTool: { p50: number; p95: number };
};

export async function steerLatency(infra: Infra, options: { runs: number }): Promise<SteerResult> {
  const stack = await startBenchStack(infra, { workers: 1 });
  const answer: number[] = [];
  const taken: number[] = [];
  const afterTool: number[] = [];
  let landed = 0;
  try {
    for (let run = -1; run < options.runs; run++) {
      const key = `steer/run-${run}`;
      const watch = await watchEvents(stack.client, key);
      try {
        await stack.client.chat(key, { text: 'wait 1000', id: 'p' });
        const turn = await turnOf(watch, 'p');
        await watch.next(is.toolStarted(turn));
        const t0 = performance.now();
        const steer = await stack.client.steer(key, { text: 'use Celsius', id: 's' });
        const t1 = performance.now();
        const take = await watch.next(is.steerTaken('s'));
        const toolEnded = await watch.next(is.toolEnded(turn));
        await watch.next(is.ended(turn));
        if (run < 0) continue; // the first run warms up
        if (steer.landed) landed++;
        answer.push(t1 - t0);
        taken.push(take.arrived - t0);
        afterTool.push(take.arrived - toolEnded.arrived);
      } finally {
        watch.close();
      }
    }
  } finally {
    await stack.stop();
  }
  const summary = (xs: number[]) => ({ p50: median(xs), p95: percentile(xs, 95) });
  return { runs: options.runs, landed, answer: summary(answer), taken: summary(taken), afterTool: summary(afterTool) };
}
