// `npx tsx bench/cross-gateway-read.ts [runs]` with KAFKA_BROKERS and DATABASE_URL set (`npm run infra`): read your
// writes behind a balancer. A chat is sent through one gateway, and the conversation's status read right after through
// another with the 202's `Rudder-Min-Position`, one at a time; prints the read's p50 / p90 ms. The second gateway learns
// the position from the commit's announcement (every gateway hears every commit's `last`), or else from the record its
// consumer fetches (in batches, every 50 ms at most). See docs/performance.md.
import { performance } from 'node:perf_hooks';
import { startGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { startBenchStack } from './stack';
import { median, percentile } from './stats';

const runs = Number(process.argv[2] ?? '100');
const { KAFKA_BROKERS, DATABASE_URL } = process.env;
if (!KAFKA_BROKERS || !DATABASE_URL) throw new Error('set KAFKA_BROKERS and DATABASE_URL (npm run infra)');
const stack = await startBenchStack({ kafkaBrokers: KAFKA_BROKERS, databaseUrl: DATABASE_URL });
const other = await startGateway(readConfig({ ...stack.env, GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
const reads: number[] = [];
const sameGateway: number[] = [];
try {
  for (let run = -10; run < runs; run++) {
    const key = `cross-gateway/${run}-${Math.random().toString(36).slice(2, 8)}`;
    const chat = await stack.http.post(key, '/chat', { text: 'hello', id: `c-${run}` });
    const position = chat.headers.get('rudder-position')!;
    const t0 = performance.now();
    const read = await fetch(`${other.url}/v1/conversations/${encodeURIComponent(key)}`, { headers: { 'rudder-min-position': position } });
    const status = (await read.json()) as { lastInputId?: string };
    if (read.status !== 200 || status.lastInputId !== `c-${run}`) throw new Error(`read ${read.status}: ${JSON.stringify(status)}`);
    if (run >= 0) reads.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The same, through the gateway that answered the write (it asks the companion for its position by itself).
    const again = `${key}-same`;
    await stack.http.post(again, '/chat', { text: 'hello', id: `s-${run}` });
    const t1 = performance.now();
    const same = await stack.http.get<{ lastInputId?: string }>(again);
    if (same.status !== 200 || same.body.lastInputId !== `s-${run}`) throw new Error(`read ${same.status}: ${JSON.stringify(same.body)}`);
    if (run >= 0) sameGateway.push(performance.now() - t1);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
} finally {
  await other.stop();
  await stack.stop();
}
const line = (xs: number[]) => `p50 ${median(xs).toFixed(1)} ms, p90 ${percentile(xs, 90).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
console.log(`${runs} reads right after a chat's 202: through the other gateway with Rudder-Min-Position ${line(reads)}; through the same gateway ${line(sameGateway)}`);
