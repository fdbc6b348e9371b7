import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RudderClient } from '@rudder/client';
import { testScript } from './scripts';
import { WAIT, startStack, type Stack, type WorkerProcess } from './stack';

/** Prometheus metrics of each service, scraped after a steered turn (issue 12, item 5). */
let stack: Stack;
let worker: WorkerProcess;
let workerMetrics: string;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
  worker = await stack.startWorker({ METRICS_PORT: '0' });
  const served = worker.output().split('\n').find((line) => line.includes('"metrics served"'))!;
  workerMetrics = (JSON.parse(served) as { url: string }).url;
});
afterAll(() => stack?.stop());

/** The value of the sample `name` whose labels include `labels` (summed over the others), from the text format. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const has = Object.entries(labels).every(([k, v]) => (match[2] ?? '').includes(`${k}="${v}"`));
    if (!has) continue;
    found = true;
    sum += Number(match[3]);
  }
  if (!found) throw new Error(`no sample ${name}${JSON.stringify(labels)} in:\n${text.split('\n').filter((l) => l.startsWith(name)).join('\n') || '(none of that name)'}`);
  return sum;
}

const scrape = async (url: string) => {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  return response.text();
};

describe('metrics', () => {
  it('the worker, the gateway and the companion count a steered turn, its inputs, model requests and streams', async () => {
    const client = new RudderClient({ baseUrl: stack.gatewayUrl });
    const key = `metrics/turn-${Date.now()}`;
    const watching = new AbortController();
    const ended = (async () => {
      for await (const event of client.events(key, { after: 0, signal: watching.signal })) {
        if (event.type === 'tool.started') await client.steer(key, { text: 'use Celsius', id: 'm-steer' });
        if (event.type === 'turn.ended') return event;
      }
    })();
    await sleep(300);
    const gatewayWhileOpen = await scrape(`${stack.gatewayUrl}/metrics`);
    expect(sample(gatewayWhileOpen, 'rudder_sse_clients')).toBe(1);
    await client.chat(key, { text: 'wait 800', id: 'm-chat' });
    expect(await ended).toMatchObject({ data: { status: 'completed', steered: [{ id: 'm-steer' }] } });
    watching.abort();

    const text = await vi.waitFor(async () => {
      const scraped = await scrape(workerMetrics);
      expect(sample(scraped, 'rudder_turn_duration_seconds_count', { status: 'completed' }), 'the turn in the worker metrics').toBe(1);
      return scraped;
    }, WAIT);
    expect(sample(text, 'rudder_inputs_total', { kind: 'chat', decision: 'accepted' })).toBe(1);
    expect(sample(text, 'rudder_inputs_total', { kind: 'steer', decision: 'accepted' })).toBe(1);
    expect(sample(text, 'rudder_steers_total', { landed: 'true' })).toBe(1);
    expect(sample(text, 'rudder_steers_taken_total')).toBe(1);
    expect(sample(text, 'rudder_turn_duration_seconds_count', { status: 'completed' })).toBe(1);
    expect(sample(text, 'rudder_turn_duration_seconds_sum', { status: 'completed' })).toBeGreaterThan(0.7);
    // the tool call, then the answer after the steer
    expect(sample(text, 'rudder_model_request_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'rudder_model_time_to_first_token_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'rudder_rebalances_total')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'rudder_partitions_owned')).toBe(3);
    expect(sample(text, 'rudder_outbox_backlog')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_cpu_user_seconds_total', { service: 'turn-worker' })).toBeGreaterThan(0);

    const gateway = await scrape(`${stack.gatewayUrl}/metrics`);
    expect(sample(gateway, 'rudder_sse_clients')).toBe(0);
    expect(sample(gateway, 'rudder_http_request_duration_seconds_count', { method: 'POST', route: '/v1/conversations/:key/chat', status: '202' })).toBe(1);
    expect(sample(gateway, 'rudder_http_request_duration_seconds_count', { method: 'POST', route: '/v1/conversations/:key/steer', status: '200' })).toBe(1);

    // The companion folds the turn's last events a moment after the stream has them.
    const companion = await vi.waitFor(async () => {
      const scraped = await scrape(`${stack.companionUrl}/metrics`);
      expect(sample(scraped, 'rudder_companion_events_folded_total', { result: 'applied' }), 'the turn folded in the companion metrics').toBeGreaterThanOrEqual(10);
      return scraped;
    }, WAIT);
    expect(sample(companion, 'rudder_companion_fold_duration_seconds_count')).toBeGreaterThan(0);
  });

  it('model tokens are counted as the model reports them', async () => {
    const text = await scrape(workerMetrics);
    // the scripted model reports rough counts (words) with every reply
    expect(sample(text, 'rudder_model_tokens_total', { kind: 'prompt' })).toBeGreaterThan(0);
    expect(sample(text, 'rudder_model_tokens_total', { kind: 'completion' })).toBeGreaterThan(0);
  });
});
