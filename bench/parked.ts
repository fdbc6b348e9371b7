import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { freePort } from '../test/system';
import { sample, scrape } from '../test/prometheus';
import { is, watchEvents } from './events';
import { startBenchStack, type BenchStack } from './stack';
import { median, table } from './stats';

/**
 * `npx tsx bench/parked.ts [--checkpoints 1000,5000,10000]`, with KAFKA_BROKERS and DATABASE_URL
 * set (it starts no infrastructure): what parked turns cost a worker. One
 * worker (the test worker app, agent `approving`); conversations are parked one after another —
 * a chat whose model reply calls `send_email`, which waits for a person's approval. At each
 * checkpoint of parked conversations: the worker's heap after a full garbage collection, the
 * conversations it holds folded (`rudder_conversations_held`; idle ones are let go after 1 s),
 * and its CPU (user + system, /proc) over 10 s of nothing happening. Then a worker restart (a
 * rebalance: it must not load or poke the parked ones): CPU of the new process in its first
 * 10 s after it owns the partitions, then its heap, held conversations and idle CPU as above;
 * and 20 of the parked ones approved, one at a time: from the decision's 200 to the turn's end
 * on the stream.
 */
const { values: args } = parseArgs({ options: { checkpoints: { type: 'string', default: '1000,5000,10000' } } });
const checkpoints = args.checkpoints.split(',').map(Number);
const { KAFKA_BROKERS, DATABASE_URL } = process.env;
if (!KAFKA_BROKERS || !DATABASE_URL) throw new Error('set KAFKA_BROKERS and DATABASE_URL (npm run infra prints them)');

const GC_PRELOAD = fileURLToPath(new URL('gc-on-signal.cjs', import.meta.url));
const IDLE_WINDOW_MS = 10_000;
const key = (n: number) => `parked/${n}`;

/** A process's CPU time so far, in ms (utime + stime of /proc/<pid>/stat, at 100 ticks a second). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

async function until(done: () => Promise<boolean>, what: string, timeoutMs = 600_000) {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`bench: waited too long for ${what}`);
    await sleep(200);
  }
}

type Point = { parked: number; held: number; heapMb: number; idleCpuMsPerS: number };

async function main() {
  const port = await freePort();
  const metricsUrl = `http://127.0.0.1:${port}/metrics`;
  const workerEnv = { WORKER_IDLE_FORGET_MS: '1000', METRICS_PORT: String(port), NODE_OPTIONS: `--expose-gc --require ${GC_PRELOAD}` };
  const stack: BenchStack = await startBenchStack({ kafkaBrokers: KAFKA_BROKERS!, databaseUrl: DATABASE_URL! }, { workers: 1, workerEntry: 'test/agents/worker.ts', workerEnv });
  const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
  const parkedNow = async () =>
    Number((await db.query(`SELECT count(*) AS n FROM event_store.conversations WHERE jsonb_array_length(head->'awaiting') > 0`)).rows[0].n);
  try {
    const measure = async (parked: number): Promise<Point> => {
      const worker = stack.workers.at(-1)!;
      await until(async () => sample(await scrape(metricsUrl), 'rudder_conversations_held') === 0, 'idle conversations let go', 30_000).catch(() => undefined);
      const collected = () => worker.output().split('bench: garbage collected').length;
      const before = collected();
      worker.child.kill('SIGUSR2');
      await until(async () => collected() > before, 'a garbage collection', 30_000);
      const cpuBefore = cpuMs(worker.child.pid!);
      await sleep(IDLE_WINDOW_MS);
      const idleCpuMsPerS = (cpuMs(worker.child.pid!) - cpuBefore) / (IDLE_WINDOW_MS / 1000);
      const metrics = await scrape(metricsUrl);
      return { parked, held: sample(metrics, 'rudder_conversations_held'), heapMb: sample(metrics, 'nodejs_heap_size_used_bytes') / 2 ** 20, idleCpuMsPerS };
    };
    // Warm up: a few turns of the same kind, then the baseline.
    const points = [];
    let next = 0;
    const parkUpTo = async (n: number) => {
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < n; i = next++) await stack.client.chat(key(i), { text: `call send_email {"to":"p${i}@example.com","body":"hi"}`, id: 'p', agent: 'approving' });
        }),
      );
      next = n;
      await until(async () => (await parkedNow()) >= n, `${n} parked`);
    };
    points.push(await measure(0));
    const parkStart = performance.now();
    for (const checkpoint of checkpoints) {
      await parkUpTo(checkpoint);
      points.push(await measure(checkpoint));
    }
    const parkSeconds = (performance.now() - parkStart) / 1000;
    const parked = checkpoints.at(-1)!;

    // A restart: the new worker takes the partitions, and must leave the parked turns in the store.
    await stack.workers.at(-1)!.kill('SIGTERM');
    const restarted = await stack.startWorker();
    const restartCpuBefore = cpuMs(restarted.child.pid!);
    await sleep(IDLE_WINDOW_MS);
    const restartCpuMs = cpuMs(restarted.child.pid!) - restartCpuBefore;
    const afterRestart = await measure(parked);

    // Decisions on parked ones: each turn wakes from the store on whichever worker owns it now.
    const decided: number[] = [];
    for (let i = 0; i < 20; i++) {
      const conversation = key(i);
      const [waiting] = (await stack.client.status(conversation)).awaiting;
      const watch = await watchEvents(stack.client, conversation);
      try {
        const start = performance.now();
        await stack.client.approve(conversation, waiting.approvalId);
        await watch.next(is.ended(waiting.turn));
        decided.push(performance.now() - start);
      } finally {
        watch.close();
      }
    }

    const lines = [
      `## Parked turns: one worker with ${parked} conversations parked on an approval (\`bench/parked.ts\`)`,
      '',
      table(
        ['parked conversations', 'held in memory', 'worker heap after GC (MB)', 'worker CPU while nothing happens (ms/s)'],
        points.map((p) => [String(p.parked), String(p.held), p.heapMb.toFixed(1), p.idleCpuMsPerS.toFixed(1)]),
      ),
      '',
      `- parking ${parked} conversations took ${parkSeconds.toFixed(0)} s (${(parked / parkSeconds).toFixed(0)} a second: a chat, a model request, its approval stored)`,
      `- a worker restarted with them parked: ${restartCpuMs} ms of CPU in its first ${IDLE_WINDOW_MS / 1000} s after it owned the partitions, then ${afterRestart.idleCpuMsPerS.toFixed(1)} ms/s; ${afterRestart.held} conversations held, heap after GC ${afterRestart.heapMb.toFixed(1)} MB`,
      `- an approval of a parked call → its turn's end on the stream: p50 ${median(decided).toFixed(0)} ms (20 decisions)`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await db.end();
    await stack.stop();
  }
}

await main();
