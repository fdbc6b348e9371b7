import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { metricsUrlOf, openStreams, sample, scrape } from './prometheus';
import { gateName, testScript } from './scripts';
import { WAIT, startStack, type Stack, type WorkerProcess } from './stack';

/** Prometheus metrics of each service, scraped after a steered turn. */
let stack: Stack;
let worker: WorkerProcess;
let workerMetrics: string;
beforeAll(async () => {
  // The test worker app: the default agent's tools and `hold`, a tool held at a gate.
  stack = await startStack({ script: testScript, workers: 0, workerEntry: 'test/agents/worker.ts' });
  worker = await stack.startWorker({ METRICS_PORT: '0' });
  workerMetrics = metricsUrlOf(worker);
});
afterAll(() => stack?.stop());

describe('metrics', () => {
  it('the worker, the gateway and the companion count a steered turn, its inputs, model requests and streams', async () => {
    const { client } = stack;
    const key = `metrics/turn-${Date.now()}`;
    const gate = gateName('tool');
    const watching = new AbortController();
    const ended = (async () => {
      for await (const event of client.events(key, { after: 0, signal: watching.signal })) if (event.type === 'turn.ended') return event;
    })();
    // The gauge counts the stream once the gateway has it.
    await vi.waitFor(async () => expect(await openStreams(stack.gatewayUrl)).toBe(1), WAIT);
    await client.chat(key, { text: `look it up tool-gate:${gate}`, id: 'm-chat' });
    // The `hold` tool runs until the gate opens: the steer lands in the running turn by construction.
    await stack.model.gate(gate).reached();
    expect(await client.steer(key, { text: 'use Celsius', id: 'm-steer' })).toMatchObject({ landed: true });
    stack.model.gate(gate).open();
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
    expect(sample(text, 'rudder_turn_duration_seconds_sum', { status: 'completed' })).toBeGreaterThan(0);
    // the tool call, then the answer after the steer
    expect(sample(text, 'rudder_model_request_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'rudder_model_time_to_first_token_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'rudder_rebalances_total')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'rudder_partitions_owned')).toBe(3);
    expect(sample(text, 'rudder_outbox_backlog')).toBeGreaterThanOrEqual(0);
    // Every input ingested: no partition of agent.inputs has records left as of its last fetch.
    expect(sample(text, 'rudder_consumer_lag', { topic: 'agent.inputs' })).toBe(0);
    expect(sample(text, 'rudder_fenced_total')).toBe(0);
    expect(sample(text, 'process_cpu_user_seconds_total', { service: 'turn-worker' })).toBeGreaterThan(0);

    // The stream closed by the client is uncounted once the gateway sees its socket close.
    await vi.waitFor(async () => expect(await openStreams(stack.gatewayUrl)).toBe(0), WAIT);
    const gateway = await scrape(`${stack.gatewayUrl}/metrics`);
    expect(sample(gateway, 'rudder_http_request_duration_seconds_count', { method: 'POST', route: '/v1/conversations/:key/chat', status: '202' })).toBe(1);
    expect(sample(gateway, 'rudder_http_request_duration_seconds_count', { method: 'POST', route: '/v1/conversations/:key/steer', status: '200' })).toBe(1);

    // The companion folds the turn's last events a moment after the stream has them.
    const companion = await vi.waitFor(async () => {
      const scraped = await scrape(`${stack.companionUrl}/metrics`);
      expect(sample(scraped, 'rudder_companion_events_folded_total', { result: 'applied' }), 'the turn folded in the companion metrics').toBeGreaterThanOrEqual(10);
      return scraped;
    }, WAIT);
    expect(sample(companion, 'rudder_companion_fold_duration_seconds_count')).toBeGreaterThan(0);
    await vi.waitFor(async () => expect(sample(await scrape(`${stack.companionUrl}/metrics`), 'rudder_consumer_lag', { topic: 'agent.events' })).toBe(0), WAIT);
  });

  it("a quiet turn's next model request is sent ahead of its tool result's commit, and counted as used", async () => {
    const { client } = stack;
    const key = `metrics/ahead-${Date.now()}`;
    // A labelled counter has no sample until it is first counted.
    const counted = (text: string, name: string, labels: Record<string, string>) => {
      try {
        return sample(text, name, labels);
      } catch {
        return 0;
      }
    };
    const before = counted(await scrape(workerMetrics), 'rudder_model_requests_ahead_total', { outcome: 'used' });
    const watching = new AbortController();
    const ended = (async () => {
      for await (const event of client.events(key, { after: 0, signal: watching.signal })) if (event.type === 'turn.ended') return event;
    })();
    await client.chat(key, { text: 'wait 1' });
    expect(await ended).toMatchObject({ data: { status: 'completed' } });
    watching.abort();
    const text = await scrape(workerMetrics);
    expect(sample(text, 'rudder_model_requests_ahead_total', { outcome: 'used' })).toBe(before + 1);
    expect(counted(text, 'rudder_model_request_duration_seconds_count', { outcome: 'error' })).toBe(0);
  });

  it('model tokens are counted as the model reports them', async () => {
    const text = await scrape(workerMetrics);
    // the scripted model reports rough counts (words) with every reply
    expect(sample(text, 'rudder_model_tokens_total', { kind: 'prompt' })).toBeGreaterThan(0);
    expect(sample(text, 'rudder_model_tokens_total', { kind: 'completion' })).toBeGreaterThan(0);
  });

  it('the companion counts the inputs waiting, over every conversation: the follow-ups queued and the steers not taken yet', async () => {
    const { client } = stack;
    const pending = async () => {
      const text = await scrape(`${stack.companionUrl}/metrics`);
      return { chat: sample(text, 'rudder_pending_inputs', { kind: 'chat' }), steer: sample(text, 'rudder_pending_inputs', { kind: 'steer' }) };
    };
    await vi.waitFor(async () => expect(await pending()).toEqual({ chat: 0, steer: 0 }), WAIT);
    const key = `metrics/pending-${Date.now()}`;
    const gate = gateName('pending');
    await client.chat(key, { text: `look it up tool-gate:${gate}`, id: 'p-chat' });
    await stack.model.gate(gate).reached();
    await client.chat(key, { text: 'and then this', id: 'p-later' });
    expect(await client.steer(key, { text: 'use Celsius', id: 'p-steer' })).toMatchObject({ landed: true });
    await vi.waitFor(async () => expect(await pending()).toEqual({ chat: 1, steer: 1 }), WAIT);
    stack.model.gate(gate).open();
    await vi.waitFor(async () => expect(await pending()).toEqual({ chat: 0, steer: 0 }), WAIT);
  });
});
