import { performance } from 'node:perf_hooks';
import { is, turnOf, watchEvents, type EventWatch } from './events';
import { startBenchStack, type BenchStack, type Infra } from './stack';
import { median, percentile } from './stats';

/**
 * Benchmark 1: a one-step text turn, from POST chat to its turn.ended on the SSE stream, with
 * 1, 4 and 16 conversations sending side by side (closed loop: each conversation sends its
 * next chat once the last one is answered). One turn worker process.
 */
export type ChatLevel = {
  conversations: number;
  turns: number;
  p50: number;
  p95: number;
  /** Answered turns per second over the level's wall time. */
  throughput: number;
  /** Medians of where a turn's time goes (ms). */
  parts: { post: number; ingest: number; schedule: number; run: number; deliver: number };
};

type Sample = ChatLevel['parts'] & { latency: number };

export async function chatLatency(infra: Infra, options: { levels: number[]; turns: number }): Promise<ChatLevel[]> {
  const stack = await startBenchStack(infra, { workers: 1 });
  try {
    await runLevel(stack, 'warm', 2, 5); // connections, JIT, first fetches: not counted
    const levels: ChatLevel[] = [];
    for (const conversations of options.levels) {
      levels.push(await runLevel(stack, `c${conversations}`, conversations, Math.ceil(options.turns / conversations)));
    }
    return levels;
  } finally {
    await stack.stop();
  }
}

async function runLevel(stack: BenchStack, label: string, conversations: number, turnsEach: number): Promise<ChatLevel> {
  const keys = Array.from({ length: conversations }, (_, i) => `chat/${label}-${i}`);
  const watches = await Promise.all(keys.map((key) => watchEvents(stack.client, key)));
  const samples: Sample[] = [];
  const start = performance.now();
  try {
    await Promise.all(
      keys.map(async (key, i) => {
        for (let t = 0; t < turnsEach; t++) samples.push(await oneTurn(stack, watches[i], key, `t${t}`));
      }),
    );
  } finally {
    for (const watch of watches) watch.close();
  }
  const seconds = (performance.now() - start) / 1000;
  const latencies = samples.map((s) => s.latency);
  const part = (name: keyof Sample) => median(samples.map((s) => s[name]));
  return {
    conversations,
    turns: samples.length,
    p50: median(latencies),
    p95: percentile(latencies, 95),
    throughput: samples.length / seconds,
    parts: { post: part('post'), ingest: part('ingest'), schedule: part('schedule'), run: part('run'), deliver: part('deliver') },
  };
}

/**
 * One chat and its answer. The parts use the events' `at` (PostgreSQL's now() of the
 * transaction that stored them; same machine, same clock): POST to 202, POST to the input
 * stored by the worker, stored input to turn started, turn started to turn ended (the model
 * call and the commits), turn ended stored to its arrival on the stream (outbox, Kafka, the
 * gateway's consumer, SSE).
 */
async function oneTurn(stack: BenchStack, watch: EventWatch, key: string, id: string): Promise<Sample> {
  const wallStart = Date.now();
  const t0 = performance.now();
  await stack.client.chat(key, { text: `hello ${id}`, id });
  const answered = performance.now();
  const turn = await turnOf(watch, id);
  const ended = await watch.next(is.ended(turn));
  const accepted = await watch.next(is.accepted(id));
  const started = await watch.next(is.started(id));
  const at = (arrival: { event: { at: string } }) => Date.parse(arrival.event.at);
  return {
    latency: ended.arrived - t0,
    post: answered - t0,
    ingest: at(accepted) - wallStart,
    schedule: at(started) - at(accepted),
    run: at(ended) - at(started),
    deliver: wallStart + (ended.arrived - t0) - at(ended),
  };
}
