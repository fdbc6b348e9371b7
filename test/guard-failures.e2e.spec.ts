import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { answered, WAIT, startStack, type Stack } from './stack';
import { metricsUrlOf, sample, scrape } from './prometheus';

/**
 * An agent's input guard that throws, or never answers, on the team's worker app
 * (test/agents/worker.ts: the `guarded` agent fails once per marked text). One partition, so
 * every conversation here shares the partition of the input whose guard failed, which must go on.
 */
let stack: Stack;
let workerMetrics: string;
beforeAll(async () => {
  stack = await startStack({ workers: 0, workerEntry: 'test/agents/worker.ts', workerEnv: { KAFKA_PARTITIONS: '1' } });
  workerMetrics = metricsUrlOf(await stack.startWorker({ METRICS_PORT: '0' }));
});
afterAll(() => stack?.stop());

const key = (name: string) => `guard-failures/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('a guard that fails', () => {
  it('a guard that throws or hangs answers 503 guard_failed with Retry-After, the partition goes on, and the same id sent again is guarded again', async () => {
    const { client, http } = stack;
    const [thrown, hung, other] = [key('thrown'), key('hung'), key('other')];
    const tag = Math.random().toString(36).slice(2, 8);

    const throwing = await http.post(thrown, '/chat', { text: `guard:throw-once:${tag}`, id: 't1', agent: 'guarded' });
    expect(throwing.status).toBe(503);
    expect(throwing.body.error).toMatchObject({ code: 'guard_failed', details: { id: 't1' } });
    expect(Number(throwing.headers.get('retry-after'))).toBeGreaterThan(0);
    // The guard's own error is the worker's log's, not the client's.
    expect(throwing.body.error?.message).not.toContain('moderation');

    const hanging = await http.post(hung, '/chat', { text: `guard:hang-once:${tag}`, id: 'h1', agent: 'guarded' });
    expect(hanging.status).toBe(503);
    expect(hanging.body.error).toMatchObject({ code: 'guard_failed', details: { id: 'h1' } });

    // Another conversation of the same (only) partition, sent after both: answered.
    expect((await http.post(other, '/chat', { text: 'hello', id: 'o1', agent: 'guarded' })).status).toBe(202);
    expect(await answered(client, other, 'o1')).toMatchObject({ status: 'completed' });

    // The same ids again are guarded again (they pass now), not answered by the failure.
    expect((await http.post(thrown, '/chat', { text: `guard:throw-once:${tag}`, id: 't1', agent: 'guarded' })).status).toBe(202);
    expect((await http.post(hung, '/chat', { text: `guard:hang-once:${tag}`, id: 'h1', agent: 'guarded' })).status).toBe(202);
    expect(await answered(client, thrown, 't1')).toMatchObject({ status: 'completed', agent: 'guarded' });
    expect(await answered(client, hung, 'h1')).toMatchObject({ status: 'completed', agent: 'guarded' });
    // And once accepted, the id is answered as it was: 202 again, nothing sent twice.
    expect((await http.post(thrown, '/chat', { text: `guard:throw-once:${tag}`, id: 't1', agent: 'guarded' })).status).toBe(202);

    await vi.waitFor(async () => {
      const scraped = await scrape(workerMetrics);
      expect(sample(scraped, 'rudder_guard_failures_total', { agent: 'guarded', reason: 'error' })).toBe(1);
      expect(sample(scraped, 'rudder_guard_failures_total', { agent: 'guarded', reason: 'timeout' })).toBe(1);
    }, WAIT);
  });
});
