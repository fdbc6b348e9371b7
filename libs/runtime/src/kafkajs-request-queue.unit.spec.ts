import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { kafkajsRequestQueueMended } from './kafkajs-request-queue';

const require = createRequire(import.meta.url);

type Entry = { correlationId: number; apiName: string; apiKey: number; apiVersion: number; resolve(value: unknown): void; reject(error: unknown): void };
type Queue = {
  push(request: { entry: Entry; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  checkPendingRequests(): void;
  destroy(): void;
  pending: unknown[];
};
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (options: object) => Queue;

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** One broker connection's queue, as kafkajs makes it, counting its checks for pending requests. */
function queue(maxInFlightRequests: number | null = null) {
  const q = new RequestQueue({ maxInFlightRequests, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 'spec', broker: 'spec:9092', logger: quiet });
  const checks = { count: 0 };
  const check = q.checkPendingRequests.bind(q);
  q.checkPendingRequests = () => {
    checks.count += 1;
    check();
  };
  const sent: number[] = [];
  const request = (correlationId: number) => {
    const answered = new Promise((resolve, reject) => {
      const entry = { correlationId, apiName: 'Fetch', apiKey: 1, apiVersion: 11, resolve, reject };
      q.push({ entry, expectResponse: true, sendRequest: () => sent.push(correlationId) });
    });
    return answered;
  };
  const answer = (correlationId: number) => q.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 });
  return { q, checks, sent, request, answer };
}

describe("kafkajs' request queue, mended (kafkajs-request-queue.ts)", () => {
  it('is mended in the installed kafkajs (another version: look at tulios/kafkajs#1556 again, then at this mend)', () => {
    expect(kafkajsRequestQueueMended).toBe(true);
  });

  it('checks nothing once every request is answered (unmended: a check every millisecond, for good)', async () => {
    const { q, checks, sent, request, answer } = queue();
    const answered = request(1);
    expect(sent).toEqual([1]);
    answer(1);
    await answered;
    const after = checks.count;
    await sleep(60);
    expect(checks.count - after).toBe(0);
    q.destroy();
  });

  it('still sends a request held over the in-flight limit once the one in flight is answered', async () => {
    const { q, sent, request, answer } = queue(1);
    const first = request(1);
    const second = request(2);
    expect(sent).toEqual([1]);
    expect(q.pending).toHaveLength(1);
    answer(1);
    await first;
    expect(sent).toEqual([1, 2]);
    answer(2);
    await second;
    q.destroy();
  });

  it('still sends a request held by a throttle once the throttle is over', async () => {
    const { q, sent, request, answer } = queue();
    q.maybeThrottle(40);
    const answered = request(1);
    expect(sent).toEqual([]);
    await sleep(20);
    expect(sent).toEqual([]);
    await expect.poll(() => sent, { timeout: 1000, interval: 5 }).toEqual([1]);
    answer(1);
    await answered;
    q.destroy();
  });
});
