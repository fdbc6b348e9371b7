import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import pg from 'pg';
import { Topics } from '@rudder/contracts';
import { announcementChannel } from '@rudder/runtime';
import { acceptEverything, conversationEvent, inputAccepted, startHarness, steerAccepted, type Harness } from '../../../../test/support/gateway/harness';

/**
 * `Rudder-Min-Position` at the running gateway (real Kafka, the companion stub recording every
 * request): a position beyond anything the log produced is refused at once; reads asking for a
 * position the gateway has not seen yet share one wait, woken by the record that reaches it,
 * and ask the companion nothing meanwhile (it used to poll its database every 15 ms per read);
 * the announcement of a commit reaches it as well, of any conversation.
 */
let h: Harness;
let db: pg.Client;
beforeAll(async () => {
  // A long wait for positions ahead, so the test, not a timer, decides when the position comes.
  h = await startHarness({}, { aheadWaitMs: 20_000 });
  h.worker = acceptEverything;
  db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await h?.stop();
});

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

  it("a commit's announcement wakes them, of a conversation no stream or write of this gateway follows, with nothing on agent.events", async () => {
    // As a write answered by another gateway sends its client here: the commit is announced to every gateway as it commits.
    const key = uniqueKey('announced');
    h.companion.setStatus(key, { owner: 'anonymous' });
    const ahead = (await produced(uniqueKey('warm-up'))) + 50;
    const reads = Array.from({ length: 10 }, () => h.call(path(key), { headers: { 'rudder-min-position': String(ahead) } }));
    await sleep(200);
    expect(asked(key), 'no read reached the companion before its position was announced').toBe(0);
    const elsewhere = uniqueKey('elsewhere');
    const decision = steerAccepted(elsewhere, ahead, { id: 's1', text: 'use Celsius', turn: 't-1', landed: true });
    // As the event store's announcedCte writes it (json_build_object): the conversation and the last position first.
    const payload = `{"conversation" : ${JSON.stringify(elsewhere)}, "last" : ${ahead}, "after" : ${ahead - 1}, "events" : ${JSON.stringify([decision])}}`;
    const announced = Date.now();
    await db.query('SELECT pg_notify($1, $2)', [announcementChannel(h.topics.inputs.slice(0, -Topics.inputs.length)), payload]);
    const answers = await Promise.all(reads);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    // Woken by the announcement, not let go by the wait's end (20 s here).
    expect(Date.now() - announced).toBeLessThan(5000);
    expect(asked(key)).toBe(10);
  });
});
