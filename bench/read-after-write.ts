import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { startGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { startBenchStack, type Infra } from './stack';
import { median, percentile } from './stats';

/**
 * Read your writes, timed: a chat (one at a time, each in a new conversation), then the
 * conversation's status read right after its 202 — through the gateway that answered the write
 * (it asks the companion for the write's position by itself) and, for another chat, through a
 * second gateway with the 202's `Rudder-Min-Position` (as behind a balancer). Each read waits
 * until the companion's view has folded the write. Measured from the 202 to the read's answer.
 * `npx tsx bench/read-after-write.ts [runs]` runs it alone on `npm run infra`'s KAFKA_BROKERS
 * and DATABASE_URL.
 */
export type ReadAfterWriteResult = { runs: number; sameGateway: { p50: number; p95: number }; otherGateway: { p50: number; p95: number } };

export async function readAfterWrite(infra: Infra, options: { runs: number }): Promise<ReadAfterWriteResult> {
  const stack = await startBenchStack(infra);
  const other = await startGateway(readConfig({ ...stack.env, GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
  const same: number[] = [];
  const elsewhere: number[] = [];
  const read = async (url: string, key: string, id: string, headers: Record<string, string>) => {
    const answer = await fetch(`${url}/v1/conversations/${encodeURIComponent(key)}`, { headers });
    const status = (await answer.json()) as { lastInputId?: string };
    if (answer.status !== 200 || status.lastInputId !== id) throw new Error(`the read after ${id} answered ${answer.status}: ${JSON.stringify(status)}`);
  };
  try {
    // The first five warm up.
    for (let run = -5; run < options.runs; run++) {
      for (const through of ['same', 'other'] as const) {
        const key = `read-after-write/${through}-${run}-${Math.random().toString(36).slice(2, 8)}`;
        const id = `c-${run}`;
        const chat = await stack.http.post(key, '/chat', { text: 'hello', id });
        const t0 = performance.now();
        if (through === 'same') await read(stack.gatewayUrl, key, id, {});
        else await read(other.url, key, id, { 'rudder-min-position': chat.headers.get('rudder-position')! });
        if (run >= 0) (through === 'same' ? same : elsewhere).push(performance.now() - t0);
        // Its turn ends before the next write (a one-step text turn).
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  } finally {
    await other.stop();
    await stack.stop();
  }
  const summary = (xs: number[]) => ({ p50: median(xs), p95: percentile(xs, 95) });
  return { runs: options.runs, sameGateway: summary(same), otherGateway: summary(elsewhere) };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { KAFKA_BROKERS, DATABASE_URL } = process.env;
  if (!KAFKA_BROKERS || !DATABASE_URL) throw new Error('set KAFKA_BROKERS and DATABASE_URL (npm run infra)');
  const result = await readAfterWrite({ kafkaBrokers: KAFKA_BROKERS, databaseUrl: DATABASE_URL }, { runs: Number(process.argv[2] ?? '100') });
  const line = (r: { p50: number; p95: number }) => `p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms`;
  process.stdout.write(`${result.runs} reads right after a chat's 202: through the same gateway ${line(result.sameGateway)}; through another with Rudder-Min-Position ${line(result.otherGateway)}\n`);
}
