import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { DomainEvent } from '@rudder/contracts';
import { evolve, initialState } from '@rudder/conversation';
import { startBenchStack, type BenchStack, type Infra } from './stack';
import { median } from './stats';

/**
 * Benchmark 8 of `npm run bench`: what schedules cost a worker. `schedules` of them are made
 * straight through the store (one SQL statement each for the conversations and their events, as
 * `conversation.opened` and `schedule.made` would leave them: the state `evolve` folds, its
 * `dueAt`), not through the API — 100,000 makes through the API would take longer than the rest
 * of the bench — and fall due next year; `batch` of them, in as many other conversations, 40 s
 * from then. One worker, restarted after they are stored (it reads the earliest due time at its
 * assignment, as after any rebalance). Measured: the worker's RSS and its CPU over 10 s of
 * nothing happening, with no schedules and with them; then the batch's firings: each one's delay
 * from its time (`schedule.fired`'s commit time less its `at`).
 */
/**
 * Idle is measured twice from the worker's assignment: just after it (3 s to 13 s: a new
 * process still compiles its hot code and V8's memory reducer has not run yet), and settled
 * (45 s to 75 s: past both, which happen once in a process's first ~40 s), the steady cost of
 * a worker with nothing to do.
 */
const JUST_STARTED = { from: 3_000, to: 13_000 };
const SETTLED = { from: 45_000, to: 75_000 };
/** Partitions of the bench's topics (test/system.ts): the one worker owns them all. */
const PARTITIONS = 3;

/** A process's CPU time so far, in ms (utime + stime of /proc/<pid>/stat, at 100 ticks a second). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
/** A process's resident set, in MB (VmRSS of /proc/<pid>/status). */
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** The events and the state of a conversation opened by `bench` with one schedule `s` next due at `at`. */
function conversationWith(at: string): { events: DomainEvent[]; state: unknown } {
  const events: DomainEvent[] = [
    { type: 'conversation.opened', data: { owner: 'bench', agent: 'default' } },
    {
      type: 'schedule.made',
      data: {
        input: 's',
        schedule: { id: 's', at, every: null, tz: null, messages: ['it is time'], onBusy: 'enqueue', unlessUserSpokeSince: false, maxLateness: null, maker: 'bench', next: at, lastFiredAt: null },
      },
    },
  ];
  return { events, state: events.reduce(evolve, initialState()) };
}

/** Stores `count` conversations `<prefix><n>`, each with a schedule due at `at`, and their two events each. */
async function store(db: pg.Pool, prefix: string, count: number, at: string): Promise<void> {
  const { events, state } = conversationWith(at);
  const [opened, made] = events;
  await db.query(
    `INSERT INTO event_store.conversations (key, partition, head, open_work)
     SELECT $1 || n, n % $3, $4::jsonb, false FROM generate_series(0, $2 - 1) n`,
    [prefix, count, PARTITIONS, JSON.stringify(state)],
  );
  await db.query(
    `INSERT INTO event_store.events (id, conversation, type, data, once_key)
     SELECT gen_random_uuid(), $1 || n, e.type, e.data, e.once_key
       FROM generate_series(0, $2 - 1) n,
            (VALUES (1, 'conversation.opened', $3::jsonb, 'opened'), (2, 'schedule.made', $4::jsonb, 'schedule:s')) e(o, type, data, once_key)
      ORDER BY n, e.o`,
    [prefix, count, JSON.stringify(opened.data), JSON.stringify(made.data)],
  );
  // Published as far as they go: the relay has nothing of them to send.
  await db.query(
    `UPDATE event_store.conversations c SET last_position = m.last, published_position = m.last
       FROM (SELECT conversation, max(position) AS last FROM event_store.events WHERE conversation LIKE $1 || '%' GROUP BY conversation) m
      WHERE c.key = m.conversation`,
    [prefix],
  );
}

async function until(done: () => Promise<boolean>, what: string, timeoutMs = 600_000) {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`bench: waited too long for ${what}`);
    await sleep(200);
  }
}

export type SchedulesResult = { schedules: number; batch: number; none: Idle; withThem: Idle; storeSeconds: number; p50: number; p99: number; max: number; twice: number };
type Idle = { rssMb: number; cpuPercent: number; justStartedCpuPercent: number };

export async function schedulesCost(infra: Infra, { schedules: SCHEDULES, batch: BATCH }: { schedules: number; batch: number }): Promise<SchedulesResult> {
  const stack: BenchStack = await startBenchStack(infra, { workers: 1, workerEnv: { WORKER_IDLE_FORGET_MS: '1000' } });
  const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
  try {
    /** The worker's RSS, and its CPU while nothing happens: settled, and just started (JUST_STARTED, SETTLED). */
    const idle = async (): Promise<Idle> => {
      const pid = stack.workers.at(-1)!.child.pid!;
      const assigned = performance.now();
      const cpuOver = async ({ from, to }: { from: number; to: number }) => {
        await sleep(assigned + from - performance.now());
        const before = cpuMs(pid);
        await sleep(to - from);
        return ((cpuMs(pid) - before) / (to - from)) * 100;
      };
      const justStartedCpuPercent = await cpuOver(JUST_STARTED);
      const cpuPercent = await cpuOver(SETTLED);
      return { rssMb: rssMb(pid), cpuPercent, justStartedCpuPercent };
    };
    const restart = async () => {
      await stack.workers.at(-1)!.kill('SIGTERM');
      stack.workers.pop();
      await stack.startWorker();
    };
    // None: the same restart as with them, so both workers are as fresh.
    await restart();
    const none = await idle();

    const storeStart = performance.now();
    await store(db, 'later/', SCHEDULES, '2027-12-01T09:00:00.000Z');
    const batchAt = new Date(Date.now() + SETTLED.to + 30_000).toISOString();
    await store(db, 'batch/', BATCH, batchAt);
    const storeSeconds = (performance.now() - storeStart) / 1000;
    await restart();
    const withThem = await idle();
    if (Date.now() >= Date.parse(batchAt)) throw new Error('bench: the batch fell due before the idle window ended; give it more time');

    const fired = async () =>
      (await db.query<{ at: Date; due: string }>(`SELECT at, data->>'at' AS due FROM event_store.events WHERE type = 'schedule.fired' AND conversation LIKE 'batch/%'`)).rows;
    await until(async () => (await fired()).length >= BATCH, `${BATCH} firings`);
    const delays = (await fired()).map((r) => r.at.getTime() - Date.parse(r.due)).sort((a, b) => a - b);
    const p99 = delays[Math.min(delays.length - 1, Math.ceil(delays.length * 0.99) - 1)];
    const twice = Number((await db.query(`SELECT count(*) - count(DISTINCT conversation) AS n FROM event_store.events WHERE type = 'schedule.fired'`)).rows[0].n);

    return { schedules: SCHEDULES, batch: BATCH, none, withThem, storeSeconds, p50: median(delays), p99, max: delays.at(-1)!, twice };
  } finally {
    await db.end();
    await stack.stop();
  }
}

