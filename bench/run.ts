import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startInfrastructure, startLocalPostgres } from '@rudder/dev-services';
import { chatLatency } from './chat-latency';
import { frameworks } from './frameworks';
import { dbCost } from './db-cost';
import { recovery, TOOL_MS, type RecoveryResult } from './recovery';
import { longConversation, workerMemory } from './growth';
import { readAfterWrite } from './read-after-write';
import { schedulesCost } from './schedules';
import { steerLatency } from './steer-latency';
import { throughput } from './throughput';
import { ms, table } from './stats';

/**
 * `npm run bench [-- --quick]`: the real system (Kafka and PostgreSQL from dev-services, the
 * scripted model over HTTP, companion and gateway in this process, turn workers as child
 * processes), measured nine ways; prints markdown tables and writes them to bench/results.md.
 * The services' own log lines go to a file, not the terminal.
 */
const USAGE = `npm run bench [-- --quick]

  Runs the nine benchmarks on the real system (Kafka and PostgreSQL: KAFKA_BROKERS / DATABASE_URL,
  else started like npm start does), prints markdown tables and writes them to bench/results.md.
  --quick  every benchmark once, with few turns (a few minutes): checks the benchmarks run;
           the tables are printed, bench/results.md is left as it is
  --help   this text
`;
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, help: { type: 'boolean', default: false } } });
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
/** How much each benchmark does: the full run, or `--quick`'s few turns. */
const size = args.quick
  ? { chat: { levels: [1, 4], turns: 8 }, readRuns: 3, steerRuns: 2, costRuns: 1, recoveryRuns: 1, load: { workers: [1, 2], conversations: 4, seconds: 3 }, memory: { checkpoints: [20, 40], forgetMs: [1000] }, long: { earlierTurns: 20, runs: 1 }, schedules: { schedules: 2000, batch: 50 } }
  : { chat: { levels: [1, 4, 16], turns: 30 }, readRuns: 30, steerRuns: 15, costRuns: 3, recoveryRuns: 3, load: { workers: [1, 2, 3], conversations: 16, seconds: 10 }, memory: { checkpoints: [500, 1000, 2000], forgetMs: [1000, 3_600_000] }, long: { earlierTurns: 2000, runs: 7 }, schedules: { schedules: 100_000, batch: 1000 } };

const LOG_FILE = join(os.tmpdir(), `rudder-bench-${process.pid}.log`);
const RESULTS = fileURLToPath(new URL('results.md', import.meta.url));

const say = (line: string) => process.stdout.write(`${line}\n`);
const log = createWriteStream(LOG_FILE);
process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
  return log.write(chunk, done);
}) as typeof process.stderr.write;

const began = performance.now();
const loadAtStart = os.loadavg()[0];
const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
  const start = performance.now();
  say(`- ${name} …`);
  const result = await run();
  say(`  done in ${((performance.now() - start) / 1000).toFixed(1)} s`);
  return result;
};

const infra = await step('Kafka and PostgreSQL', () => startInfrastructure({ log: (line) => log.write(`dev-services ${line}\n`) }));
let report = '';
try {
  const chat = await step(`1. chat latency at ${size.chat.levels.join(', ')} conversations`, () => chatLatency(infra, size.chat));
  const reads = await step("1b. a read right after a chat's 202", () => readAfterWrite(infra, { runs: size.readRuns }));
  const steer = await step('2. steer latency', () => steerLatency(infra, { runs: size.steerRuns }));
  const cost = await step('3. cost per turn', () => dbCost(infra, { runs: size.costRuns }));
  const recoveries: RecoveryResult[] = [];
  for (const sessionTimeoutMs of [6000, 3000]) {
    recoveries.push(await step(`4. recovery, session timeout ${sessionTimeoutMs} ms`, () => recovery(infra, { sessionTimeoutMs, runs: size.recoveryRuns })));
  }

  const load = await step(`5. throughput at saturation with ${size.load.workers.join(', ')} workers`, () => throughput(infra, size.load));
  const memory = await step(`6a. worker memory after ${size.memory.checkpoints.join(', ')} conversations`, () => workerMemory(infra, size.memory));
  const long = await step('6b. first turn after a restart in a long conversation', () => longConversation(infra, size.long));
  const framed = await step('7. a framework\'s one-tool turn', () => frameworks(infra, { conversations: size.load.conversations, seconds: size.load.seconds }));
  const timed = await step(`8. ${size.schedules.schedules} schedules waiting, ${size.schedules.batch} due at once`, () => schedulesCost(infra, size.schedules));
  const primaries = await step('9. one worker per PostgreSQL primary, on one and on three', () => onePerPrimary(size.load));

  const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}×`;
  const base = chat[0];
  const sections = [
    '## 1. Chat latency: POST chat → turn.ended on SSE (one-step text turn, one worker process)',
    table(
      ['conversations in parallel', 'turns', 'p50 ms', 'p95 ms', 'p50 vs 1', 'turns/s', 'turns/s vs 1'],
      chat.map((l) => [l.conversations, l.turns, ms(l.p50), ms(l.p95), ratio(l.p50, base.p50), l.throughput.toFixed(1), ratio(l.throughput, base.throughput)]),
    ),
    'Where the time goes (medians, ms; from the events\' stored `at`, PostgreSQL `now()` of each write). The gateway, ' +
      'the companion and the load generator share one Node process here, so the edges (POST → 202, stored → on SSE) ' +
      'include waiting for that event loop:',
    table(
      ['conversations', 'POST → 202', 'POST → input stored', 'input → turn started', 'turn started → ended', 'ended stored → on SSE'],
      chat.map((l) => [l.conversations, ms(l.parts.post), ms(l.parts.ingest), ms(l.parts.schedule), ms(l.parts.run), ms(l.parts.deliver)]),
    ),
    `A read of the status right after a chat's 202 (read your writes: it waits until the companion has folded the chat; ` +
      `${reads.runs} reads each, one at a time, from the 202 to the read's answer):`,
    table(
      ['read', 'p50 ms', 'p95 ms'],
      [
        ['through the gateway that answered the write', ms(reads.sameGateway.p50), ms(reads.sameGateway.p95)],
        ['through another gateway, with `Rudder-Min-Position`', ms(reads.otherGateway.p50), ms(reads.otherGateway.p95)],
      ],
    ),
    `## 2. Steer latency (turn in \`wait 1000\`, steer sent at its tool.started; ${steer.runs} runs, ${steer.landed} landed)`,
    table(
      ['from', 'to', 'p50 ms', 'p95 ms'],
      [
        ['POST steer', '200 answer (the worker\'s decision)', ms(steer.answer.p50), ms(steer.answer.p95)],
        ['POST steer', 'steer.taken on SSE', ms(steer.taken.p50), ms(steer.taken.p95)],
        ['tool.ended on SSE', 'steer.taken on SSE', ms(steer.afterTool.p50), ms(steer.afterTool.p95)],
      ],
    ),
    'steer.taken is stored in the same transaction as the result that completes the step, so once the tool is done taking ' +
      'the steer adds nothing; POST steer → taken is the rest of the tool call.',
    `## 3. Cost per one-tool turn (median of ${cost.unsteered.runs} turns each; steering enabled)`,
    table(
      ['', 'unsteered', 'steered', 'steered / unsteered'],
      [
        ['SQL statements (round trips)', cost.unsteered.statements, cost.steered.statements, ratio(cost.steered.statements, cost.unsteered.statements)],
        ...[...new Set([...Object.keys(cost.unsteered.byKind), ...Object.keys(cost.steered.byKind)])].map((kind) => [
          `… of which ${kind}`,
          cost.unsteered.byKind[kind] ?? 0,
          cost.steered.byKind[kind] ?? 0,
          ratio(cost.steered.byKind[kind] ?? 0, cost.unsteered.byKind[kind] ?? 0),
        ]),
        ['records on agent.events', cost.unsteered.events, cost.steered.events, ratio(cost.steered.events, cost.unsteered.events)],
        ['records on agent.tokens', cost.unsteered.tokens, cost.steered.tokens, ratio(cost.steered.tokens, cost.unsteered.tokens)],
      ],
    ),
    `Events, unsteered: ${cost.unsteered.eventTypes.join(', ')}.  \nEvents, steered: ${cost.steered.eventTypes.join(', ')}.`,
    `## 4. Recovery: worker SIGKILLed during a \`wait ${TOOL_MS}\` tool call, another started at once (${recoveries[0].runs} runs each)`,
    table(
      ['WORKER_SESSION_TIMEOUT_MS', 'kill → successor assigned (runs)', 'kill → next committed event (runs)', 'median next event', 'vs 6000', 'assigned → next event (tool reruns)', 'worker boot, empty group'],
      recoveries.map((r) => [
        r.sessionTimeoutMs,
        r.assigned.map(ms).join(', '),
        r.nextEvent.map(ms).join(', '),
        ms(r.median.nextEvent),
        ratio(r.median.nextEvent, recoveries[0].median.nextEvent),
        ms(r.median.afterAssigned),
        ms(r.bootMs),
      ]),
    ),
    'The successor boots while the dead member\'s session runs out (the group drops it one session timeout after its last ' +
      'heartbeat, WORKER_HEARTBEAT_MS = 500), so failover ≈ the session timeout as long as that exceeds the boot; then the ' +
      `interrupted tool runs again from the start (${TOOL_MS} ms) before its result is committed.`,
    `## 5. Throughput at saturation: ${size.load.conversations} conversations, one-tool turns (\`wait 0\`), closed loop, ${size.load.seconds} s per level`,
    table(
      ['worker processes', 'turns', 'turns/s', 'vs 1 worker', 'p50 ms', 'worker CPU-ms / turn (all)', 'bench process CPU-ms / turn'],
      load.map((l) => [l.workers, l.turns, l.turnsPerSecond.toFixed(1), ratio(l.turnsPerSecond, load[0].turnsPerSecond), ms(l.p50), l.cpuMsPerTurn.workers.toFixed(1), l.cpuMsPerTurn.benchProcess.toFixed(1)]),
    ),
    'The bench process holds the gateway, the companion, the scripted model and the load generator; Kafka and PostgreSQL ' +
      'share the same two cores and are not counted here (see docs/performance.md for a per-process breakdown of `npm start`).',
    '## 6. Cost as work grows',
    table(
      ['idle conversations let go after', ...memory[0].points.map((p) => `after ${p.conversations} conversations: held, heap MB`), 'kB per conversation'],
      memory.map((m) => [
        m.forgetMs >= 3_600_000 ? 'never (1 h)' : `${m.forgetMs} ms`,
        ...m.points.map((p) => `${p.held}, ${p.heapMb.toFixed(1)}`),
        m.kbPerConversation.toFixed(1),
      ]),
    ),
    'Heap: V8 heap used after a full garbage collection (`nodejs_heap_size_used_bytes` scraped right after one); held: ' +
      '`rudder_conversations_held`. With idle conversations let go, what a worker holds does not grow with the conversations ' +
      'it has seen, so 100,000 idle ones cost what 0 do; kept, each costs the slope.',
    table(
      ['turn', `first after a worker restart, ms (median of ${size.long.runs})`, 'vs new (median of the runs’ ratios)', 'the next one, same worker, ms', 'vs new (median of the runs’ ratios)'],
      [
        ['in a new conversation', ms(long.newConversationMs), '1.0×', ms(long.newConversationNextMs), '1.0×'],
        [
          `in a conversation with ${long.earlierTurns} earlier turns`,
          ms(long.longConversationMs),
          `${long.firstRatio.toFixed(1)}×`,
          ms(long.longConversationNextMs),
          `${long.nextRatio.toFixed(1)}×`,
        ],
      ],
    ),
    'Each run measures the new conversation and then the long one, each after a restart of its own; the ratio is taken per ' +
      'run and its median given, so that a machine that drifts between runs moves both sides of it.',
    'A model request carries at most the last HISTORY_TURNS (100) earlier turns, and the fold keeps only those, so neither ' +
      'the next turn\'s request nor the snapshot the first one reads grows past them with the conversation\'s length: ' +
      `the long conversation's snapshot is ${long.snapshotKb.toFixed(0)} kB here.`,
    `## 7. A framework's one-tool turn: one worker, ${size.load.conversations} conversations, \`wait 0\`, closed loop, ${size.load.seconds} s each`,
    table(
      ['the agent written with', 'turns', 'turns/s', 'p50 ms', 'worker CPU-ms / turn', 'vs own loop'],
      framed.map(({ name, level }) => [name, level.turns, level.turnsPerSecond.toFixed(1), ms(level.p50), level.cpuMsPerTurn.workers.toFixed(1), ratio(level.cpuMsPerTurn.workers, framed[0].level.cpuMsPerTurn.workers)]),
    ),
    'The same turn (one `wait 0` call, then the answer) and the same agent settings; the framework runs its own loop through ' +
      'its adapter (a durable model and durable tools on the loop seam), with its own model client talking to the scripted model.',
    `## 8. Schedules: one worker, ${timed.schedules} schedules waiting and a batch of ${timed.batch} falling due at once`,
    table(
      ['schedules stored', 'worker RSS (MB)', 'worker CPU while nothing happens, settled (% of a core)', 'the same just after its start'],
      [
        ['0', timed.none.rssMb.toFixed(1), timed.none.cpuPercent.toFixed(2), timed.none.justStartedCpuPercent.toFixed(2)],
        [String(timed.schedules + timed.batch), timed.withThem.rssMb.toFixed(1), timed.withThem.cpuPercent.toFixed(2), timed.withThem.justStartedCpuPercent.toFixed(2)],
      ],
    ),
    'CPU of the worker process (all its threads, from /proc), 45 s to 75 s after its assignment (settled: past its own start, ' +
      'the compiles of its hot code and V8\'s memory reducer, which run once in its first ~40 s), and 3 s to 13 s after it.',
    `Stored straight through the store (SQL, as their events leave them: \`bench/schedules.ts\`) in ${timed.storeSeconds.toFixed(1)} s, the worker restarted after; ` +
      'a schedule is a row of its conversation\'s state with its next time in the indexed due time, and the worker keeps one timer for its partitions\' earliest. ' +
      `The batch of ${timed.batch}, due at one moment: delay from its time to its \`schedule.fired\`'s commit p50 ${ms(timed.p50)} ms, p99 ${ms(timed.p99)} ms, max ${ms(timed.max)} ms; fired twice: ${timed.twice}.`,
    `## 9. One worker per PostgreSQL primary: ${size.load.conversations} conversations, one-tool turns (\`wait 0\`), closed loop, ${size.load.seconds} s per level`,
    table(
      ['worker processes', 'primaries', 'turns', 'turns/s', 'vs 1 on 1', 'p50 ms', 'worker CPU-ms / turn (all)', 'bench process CPU-ms / turn'],
      primaries.map((l) => [l.workers, l.databases, l.turns, l.turnsPerSecond.toFixed(1), ratio(l.turnsPerSecond, primaries[0].turnsPerSecond), ms(l.p50), l.cpuMsPerTurn.workers.toFixed(1), l.cpuMsPerTurn.benchProcess.toFixed(1)]),
    ),
    'Three partitions, so three workers own one each, and on three primaries each worker writes to one primary only ' +
      '(`DATABASE_URLS`; docs/operations.md, "Several PostgreSQL primaries"). The three primaries are three local PostgreSQL servers ' +
      'started for this benchmark, on the same two cores as everything else: the row says what the sharded path costs here, not ' +
      'what three machines would give.',
  ];
  const cpu = os.cpus();
  const header = [
    '# Benchmarks',
    `${new Date().toISOString().slice(0, 10)} — ${cpu.length} × ${cpu[0]?.model.trim() ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ` +
      `Kafka ${infra.source.kafka}, PostgreSQL ${infra.source.postgres}; everything on loopback on this one machine (Kafka, PostgreSQL, ` +
      `the scripted model, companion, gateway, workers and the load generator share the cores). Run: \`npm run bench${args.quick ? ' -- --quick' : ''}\`, ` +
      `${((performance.now() - began) / 1000).toFixed(0)} s in all; 1-minute load average ${loadAtStart.toFixed(1)} at the start ` +
      `(other work on the machine shows up most in benchmark 1).`,
  ];
  report = [...header, ...sections].join('\n\n') + '\n';
} catch (error) {
  say(`bench failed: ${error instanceof Error ? error.stack : String(error)}\nservice logs in ${LOG_FILE}`);
  process.exitCode = 1;
} finally {
  await infra.stop();
}
if (process.exitCode) process.exit();
say('');
say(report);
if (args.quick) say(`--quick: bench/results.md left as it is; service logs in ${LOG_FILE}`);
else {
  await writeFile(RESULTS, report + (await keptSections()));
  say(`written to bench/results.md (its other sections kept); service logs in ${LOG_FILE}`);
}
log.end();
process.exit(0);

/**
 * The sections of bench/results.md this run does not write — the anchors beside the Restate
 * copy, the other scripts' (long-history, parked, slow-readers), and earlier runs' notes — kept
 * after its own, in their order: a run replaces its nine sections and nothing else.
 */
async function keptSections(): Promise<string> {
  const before = await readFile(RESULTS, 'utf8').catch(() => '');
  const sections = before.split(/\n(?=## )/).slice(1);
  const kept = sections.filter((section) => !/^## [1-9]\. /.test(section));
  return kept.length === 0 ? '' : `\n${kept.map((section) => section.trimEnd()).join('\n\n')}\n`;
}

/**
 * Benchmark 9: throughput with one worker on one primary, three workers on one, and three on
 * three primaries (the run's server and two more local servers started here, stopped after).
 */
async function onePerPrimary(load: { conversations: number; seconds: number }) {
  const extra = await Promise.all([startLocalPostgres({ log: (line) => log.write(`dev-services ${line}\n`) }), startLocalPostgres({ log: (line) => log.write(`dev-services ${line}\n`) })]);
  try {
    const onOne = await throughput(infra, { ...load, workers: [1, 3] });
    const onThree = await throughput({ ...infra, databaseServers: [infra.databaseUrl, ...extra.map((server) => server.databaseUrl)] }, { ...load, workers: [3], databases: 3 });
    return [...onOne, ...onThree];
  } finally {
    await Promise.all(extra.map((server) => server.stop()));
  }
}
