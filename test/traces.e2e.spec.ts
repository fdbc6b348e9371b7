import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testScript } from './scripts';
import { WAIT, startStack, type Stack } from './stack';

/**
 * Traces: one trace per input across the three services. Each process
 * exports OTLP/HTTP (JSON) to a tiny receiver here: the gateway and the companion run in this
 * process, the turn worker in its own.
 */
type Span = { traceId: string; spanId: string; parentSpanId?: string; name: string; scope: string; service: string };
const spans: Span[] = [];
let receiver: Server;
let stack: Stack;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const sent = JSON.parse(body) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { scope: { name: string }; spans: Omit<Span, 'scope' | 'service'>[] }[];
        }[];
      };
      for (const { resource, scopeSpans } of sent.resourceSpans) {
        const service = resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const { scope, spans: some } of scopeSpans) for (const span of some) spans.push({ ...span, scope: scope.name, service });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
  stack = await startStack({ script: testScript });
});
afterAll(async () => {
  // The spec files of a vitest worker share its process (vitest.config.ts): later ones must not export here.
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await stack?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('traces', () => {
  it("one trace per input: the gateway's request, the worker's turn with its model and tool calls, the outbox publication, the companion's fold", async () => {
    const { client } = stack;
    const key = `traces/turn-${Date.now()}`;
    await client.chat(key, { text: 'wait 50', id: 'trace-chat' });
    await vi.waitFor(async () => expect((await client.turnOf(key, 'trace-chat')).status).toBe('completed'), WAIT);

    const request = await vi.waitFor(() => {
      const found = spans.find((s) => s.scope === 'rudder-gateway' && s.name === 'POST /v1/conversations/:key/chat');
      expect(found).toBeDefined();
      return found!;
    }, WAIT);
    const inTrace = () => spans.filter((s) => s.traceId === request.traceId);
    const names = () => inTrace().map((s) => `${s.scope} ${s.name}`);
    await vi.waitFor(
      () =>
        expect(names()).toEqual(
          expect.arrayContaining([
            'rudder-turn-worker turn',
            'rudder-turn-worker model request',
            'rudder-turn-worker tool wait',
            'rudder-turn-worker outbox publish',
            'rudder-companion fold',
          ]),
        ),
      WAIT,
    );
    // Each hop is a child of the one before: request → turn → model request, tool; turn → publication → fold.
    const byId = new Map(inTrace().map((s) => [s.spanId, s]));
    const parentOf = (span: Span) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);
    const turn = inTrace().find((s) => s.name === 'turn')!;
    expect(parentOf(turn)).toBe(request);
    expect(turn.service).toBe('rudder-turn-worker');
    for (const name of ['model request', 'tool wait', 'outbox publish']) {
      for (const span of inTrace().filter((s) => s.name === name)) expect(parentOf(span)).toBe(turn);
    }
    for (const fold of inTrace().filter((s) => s.name === 'fold')) expect(parentOf(fold)?.name).toBe('outbox publish');
  });
});
