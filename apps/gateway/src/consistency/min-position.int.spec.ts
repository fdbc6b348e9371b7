import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { acceptEverything, conversationEvent, inputAccepted, startHarness, type Harness } from '../../../../test/support/gateway/harness';

/**
 * `Rudder-Min-Position` at the running gateway (real Kafka, the companion stub recording every
 * request): a position beyond anything the log produced is refused at once; reads asking for a
 * position the gateway has not seen yet share one wait, woken by the record that reaches it,
 * and ask the companion nothing meanwhile (it used to poll its database every 15 ms per read).
 */
let h: Harness;
beforeAll(async () => {
  // A long wait for positions ahead, so the test, not a timer, decides when the position comes.
  h = await startHarness({}, { aheadWaitMs: 20_000 });
  h.worker = acceptEverything;
});
afterAll(() => h?.stop());

const path = (key: string) => `/v1/conversations/${encodeURIComponent(key)}`;
const uniqueKey = (name: string) => `min-position/${name}-${Math.random().toString(36).slice(2, 8)}`;
const asked = (key: string) => h.companion.requests.filter((request) => request.startsWith(`/conversations/${encodeURIComponent(key)}`)).length;

/** Publishes an event and waits until the gateway has seen it: a read asking for its position then goes through. */
async function produced(key: string): Promise<number> {
  const event = inputAccepted(key, { id: `seen-${Math.random().toString(36).slice(2, 8)}`, messages: ['x'] });
  await h.publishEvents([event]);
  h.companion.setStatus(key, { owner: 'anonymous' });
  await vi.waitFor(async () => expect((await h.call(path(key), { headers: { 'rudder-min-position': String(event.position) } })).status).toBe(200), { timeout: 15_000, interval: 50 });
  return event.position;
}

describe('Rudder-Min-Position', () => {
  it('a position beyond anything the log has produced is 400 at once, and the companion is not asked', async () => {
    const key = uniqueKey('beyond');
    await produced(uniqueKey('warm-up'));
    const before = asked(key);
    const answers = await Promise.all(Array.from({ length: 60 }, () => h.call(path(key), { headers: { 'rudder-min-position': '900000000000' } })));
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/beyond anything the log has produced/) });
    }
    expect(asked(key) - before).toBe(0);
  });

  it('reads waiting for a position share one wait: the companion hears nothing of them until the record comes, then one request each; a chat meanwhile is answered', async () => {
    const key = uniqueKey('waiting');
    h.companion.setStatus(key, { owner: 'anonymous' });
    const seen = await produced(uniqueKey('warm-up'));
    // Real, but not produced yet: a little ahead of what the gateway has seen (as another gateway's answer may be).
    const ahead = seen + 50;
    const reads = Array.from({ length: 60 }, () => h.call(path(key), { headers: { 'rudder-min-position': String(ahead) } }));
    const chatKey = uniqueKey('chat');
    const chat = await h.call(`${path(chatKey)}/chat`, { body: { text: 'hello meanwhile' } });
    expect(chat.status).toBe(202);
    await sleep(200);
    expect(asked(key), 'no read reached the companion before its position was produced').toBe(0);
    // The record that reaches the position (of any conversation) wakes them all.
    await h.publishEvents([conversationEvent(uniqueKey('other'), 'input.accepted', { input: { id: 'late', kind: 'chat', text: 'x', messages: ['x'], subject: 'anonymous', sentAt: new Date().toISOString() } }, ahead)]);
    const answers = await Promise.all(reads);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(asked(key), 'each read asked the companion once, with the position').toBe(60);
    expect(h.companion.requests.filter((r) => r.startsWith(`/conversations/${encodeURIComponent(key)}`)).length).toBe(60);
  });
});
