import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { lastUserText, messageText, reply, type Script } from '@rudder/scripted-model';
import { BUDGET_TOKENS, COMPACT_AT_TOKENS, SUMMARY_PROMPT } from '../test/agents/budget';
import { startSystem, type Stack } from '../test/system';
import { is, turnOf, watchEvents, type EventWatch } from './events';
import { median, table } from './stats';

/**
 * `npx tsx bench/long-history.ts [--checkpoints 10,100,1000] [--measured 9]`, with KAFKA_BROKERS
 * and DATABASE_URL set (it starts no infrastructure): the cost of a turn as a conversation grows
 * (the token budget and compaction). Two conversations of ~1,000-character prompts on the test worker app's agents with
 * a 6,000-token budget: `compacting` (compacts past 4,000) and `budgeted` (never compacts: earlier
 * turns are only left out). At each checkpoint of earlier turns, `measured` more turns one at a
 * time: the tokens of the request the model received, the latency from the chat to its
 * turn.ended on the event stream, and the worker's CPU (user + system, /proc) per turn.
 */
const { values: args } = parseArgs({ options: { checkpoints: { type: 'string', default: '10,100,1000' }, measured: { type: 'string', default: '9' } } });
const checkpoints = args.checkpoints.split(',').map(Number);
const measured = Number(args.measured);
const { KAFKA_BROKERS, DATABASE_URL } = process.env;
if (!KAFKA_BROKERS || !DATABASE_URL) throw new Error('set KAFKA_BROKERS and DATABASE_URL (npm run infra prints them)');

const PROMPT_CHARS = 1000;
const prompt = (agent: string, n: number) => {
  let text = `turn ${n} of ${agent}:`;
  for (let i = 0; text.length < PROMPT_CHARS; i++) text += ` ${['river', 'stone', 'garden', 'lantern', 'harbour', 'meadow'][(i + n) % 6]}${i % 11}`;
  return text.slice(0, PROMPT_CHARS);
};

const script: Script = (request) => {
  if (messageText(request.body.messages[0]) === SUMMARY_PROMPT) return reply.text('The user wrote many numbered turns of words; the assistant noted each one.');
  return reply.text(`noted ${/^turn (\d+)/.exec(lastUserText(request))?.[1] ?? '?'}`);
};

/** The worker's CPU time so far, in ms (utime + stime of /proc/<pid>/stat, at 100 ticks a second). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

type Point = { agent: string; earlier: number; tokens: number; summaries: number; latencyMs: number; cpuMs: number };

async function turn(stack: Stack, watch: EventWatch, key: string, agent: string, n: number): Promise<number> {
  const start = performance.now();
  await stack.client.chat(key, { text: prompt(agent, n), id: `m${n}`, ...(n === 0 ? { agent } : {}) });
  await watch.next(is.ended(await turnOf(watch, `m${n}`)));
  return performance.now() - start;
}

const stack = await startSystem({ kafkaBrokers: KAFKA_BROKERS, databaseUrl: DATABASE_URL }, { script, workerEntry: 'test/agents/worker.ts' });
const points: Point[] = [];
try {
  const pid = stack.workers[0].child.pid!;
  const agents = ['compacting', 'budgeted'];
  const keys = new Map(agents.map((agent) => [agent, `bench/long-${agent}-${Date.now()}`]));
  const watches = new Map(await Promise.all(agents.map(async (agent) => [agent, await watchEvents(stack.client, keys.get(agent)!)] as const)));
  const done = new Map(agents.map((agent) => [agent, 0]));
  for (const checkpoint of checkpoints) {
    // Both conversations grow side by side to the checkpoint…
    await Promise.all(
      agents.map(async (agent) => {
        for (let n = done.get(agent)!; n < checkpoint; n++) await turn(stack, watches.get(agent)!, keys.get(agent)!, agent, n);
        done.set(agent, checkpoint);
      }),
    );
    // …then each is measured alone.
    for (const agent of agents) {
      const key = keys.get(agent)!;
      const requestsBefore = stack.model.requests.length;
      const cpuBefore = cpuMs(pid);
      const latencies: number[] = [];
      for (let n = checkpoint; n < checkpoint + measured; n++) latencies.push(await turn(stack, watches.get(agent)!, key, agent, n));
      const cpu = (cpuMs(pid) - cpuBefore) / measured;
      done.set(agent, checkpoint + measured);
      const sent = stack.model.requests.slice(requestsBefore);
      const turns = sent.filter((r) => messageText(r.body.messages[0]) !== SUMMARY_PROMPT);
      points.push({
        agent,
        earlier: checkpoint,
        tokens: median(turns.map((r) => r.tokens ?? 0)),
        summaries: sent.length - turns.length,
        latencyMs: median(latencies),
        cpuMs: cpu,
      });
      process.stdout.write(`${JSON.stringify(points.at(-1))}\n`);
    }
  }
  for (const watch of watches.values()) watch.close();
} finally {
  await stack.stop();
}

process.stdout.write(
  `\n${table(
    ['agent', 'earlier turns', 'request tokens (median)', 'summary requests', 'latency ms (median)', 'worker CPU ms / turn'],
    points.map((p) => [p.agent, String(p.earlier), String(p.tokens), `${p.summaries} / ${measured}`, p.latencyMs.toFixed(0), p.cpuMs.toFixed(1)]),
  )}\n\nbudget ${BUDGET_TOKENS} tokens, compactAt ${COMPACT_AT_TOKENS} (compacting); prompts of ${PROMPT_CHARS} characters\n`,
);
