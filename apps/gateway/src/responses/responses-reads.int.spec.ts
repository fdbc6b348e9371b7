import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Topics } from '@rudder/contracts';
import { announcementChannel } from '@rudder/runtime';
import { conversationEvent, inputAccepted, startHarness, type Harness } from '../../../../test/support/gateway/harness';
import { responseIdOf } from './response-id';

/**
 * What reading a response costs: its conversation's events from right before its input's
 * acceptance (the companion knows its position), not from the conversation's start — so a
 * retrieve, a cancel or a resumed stream of a late response in a long conversation reads what
 * came after its input only. And at least as far as this gateway's streams carried it.
 */
let h: Harness;
let db: pg.Client;
beforeAll(async () => {
  h = await startHarness();
  db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await h?.stop();
});

describe('reading a response', () => {
  it('reads from right before its input, not from the conversation start', async () => {
    const key = `responses-reads/${Math.random().toString(36).slice(2, 8)}`;
    h.companion.setStatus(key, { owner: 'anonymous', agent: 'default' });
    // A conversation whose earlier events the read must not page through.
    h.companion.addEvents(key, [conversationEvent(key, 'conversation.opened', { owner: 'anonymous', agent: 'default' }, 1)]);
    const accepted = { ...inputAccepted(key, { id: 'late', messages: ['and now?'] }), position: 5000, id: `e-${key}-5000` };
    h.companion.addInput(key, { id: 'late', messages: ['and now?'], state: 'delivered', position: 5000 });
    h.companion.addEvents(key, [
      accepted,
      conversationEvent(key, 'turn.started', { turn: 't-9', prompt: { id: 'late', text: 'and now?' } }, 5001),
      conversationEvent(key, 'model.replied', { turn: 't-9', step: 0, content: 'now this', toolCalls: [] }, 5002),
      conversationEvent(key, 'turn.ended', { turn: 't-9', status: 'completed', outcome: null, content: 'now this', steered: [] }, 5003),
    ]);
    const before = h.companion.requests.length;
    const answer = await h.call(`/v1/responses/${responseIdOf(key, 'late')}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'completed', model: 'default', output: [{ type: 'message', content: [{ text: 'now this' }] }] });
    const reads = h.companion.requests.slice(before).filter((path) => path.includes('/events'));
    expect(reads.length).toBeGreaterThan(0);
    for (const path of reads) expect(new URL(path, 'http://x').searchParams.get('after')).toBe('4999');
  });

  it('a streamed retrieve reads the response once: the companion knows its input, so nothing is read to find it first', async () => {
    const key = `responses-reads/${Math.random().toString(36).slice(2, 8)}`;
    h.companion.setStatus(key, { owner: 'anonymous', agent: 'default' });
    h.companion.addInput(key, { id: 'streamed', messages: ['hello?'], state: 'delivered', position: 10 });
    h.companion.addEvents(key, [
      { ...inputAccepted(key, { id: 'streamed', messages: ['hello?'] }), position: 10, id: `e-${key}-10` },
      conversationEvent(key, 'turn.started', { turn: 't-1', prompt: { id: 'streamed', text: 'hello?' } }, 11),
      conversationEvent(key, 'model.replied', { turn: 't-1', step: 0, content: 'hi', toolCalls: [] }, 12),
      conversationEvent(key, 'turn.ended', { turn: 't-1', status: 'completed', outcome: null, content: 'hi', steered: [] }, 13),
    ]);
    const eventReads = (from: number) => h.companion.requests.slice(from).filter((path) => path.includes('/events')).length;
    let before = h.companion.requests.length;
    expect((await h.call(`/v1/responses/${responseIdOf(key, 'streamed')}`)).status).toBe(200);
    const plain = eventReads(before);
    before = h.companion.requests.length;
    const streamed = await fetch(`${h.gateway.url}/v1/responses/${responseIdOf(key, 'streamed')}?stream=true`);
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('response.completed');
    expect(eventReads(before)).toBe(plain);
  });

  it('a streamed retrieve of an input the companion knows refused is 404, as the plain one is (no response was made)', async () => {
    const key = `responses-reads/${Math.random().toString(36).slice(2, 8)}`;
    h.companion.setStatus(key, { owner: 'anonymous', agent: 'default' });
    h.companion.addInput(key, { id: 'refused', messages: ['too many'], state: 'rejected', rejection: { code: 'queue_full', message: 'the follow-up queue is full' }, position: 20 });
    for (const path of [`/v1/responses/${responseIdOf(key, 'refused')}`, `/v1/responses/${responseIdOf(key, 'refused')}?stream=true`]) {
      const answer = await fetch(`${h.gateway.url}${path}`);
      expect(answer.status, path).toBe(404);
      await answer.body?.cancel();
    }
  });

  it('a retrieve, a streamed retrieve or a cancel of an id that names no input reads only after where the companion was without it', async () => {
    const key = `responses-reads/${Math.random().toString(36).slice(2, 8)}`;
    h.companion.setStatus(key, { owner: 'anonymous', agent: 'default' });
    // A long conversation the companion has folded to 5003: a made-up input cannot be in it.
    h.companion.addEvents(key, [
      conversationEvent(key, 'conversation.opened', { owner: 'anonymous', agent: 'default' }, 1),
      ...Array.from({ length: 600 }, (_, i) => ({ ...inputAccepted(key, { id: `old-${i}`, messages: ['old'] }), position: 2 + i, id: `e-${key}-${2 + i}` })),
      conversationEvent(key, 'turn.started', { turn: 't-9', prompt: { id: 'old-0', text: 'old' } }, 5003),
    ]);
    h.companion.setPosition(key, 5003);
    const made = responseIdOf(key, 'made-up');
    for (const [path, method] of [[`/v1/responses/${made}`, 'GET'], [`/v1/responses/${made}?stream=true`, 'GET'], [`/v1/responses/${made}/cancel`, 'POST']] as const) {
      const before = h.companion.requests.length;
      const answer = await fetch(`${h.gateway.url}${path}`, { method });
      expect(answer.status, path).toBe(404);
      await answer.body?.cancel();
      const reads = h.companion.requests.slice(before).filter((p) => p.includes('/events'));
      expect(reads.length, path).toBeGreaterThan(0);
      for (const read of reads) expect(Number(new URL(read, 'http://x').searchParams.get('after')), path).toBeGreaterThanOrEqual(5003);
    }
  });

  it('a retrieve right after a stream ended reads the end the stream sent, though it came announced, ahead of its record and of the companion', async () => {
    const key = `responses-reads/${Math.random().toString(36).slice(2, 8)}`;
    h.companion.setStatus(key, { owner: 'anonymous', agent: 'default' });
    h.companion.addInput(key, { id: 'announced', messages: ['hello?'], state: 'delivered', position: 30 });
    h.companion.addEvents(key, [
      { ...inputAccepted(key, { id: 'announced', messages: ['hello?'] }), position: 30, id: `e-${key}-30` },
      conversationEvent(key, 'turn.started', { turn: 't-1', prompt: { id: 'announced', text: 'hello?' } }, 31),
      conversationEvent(key, 'model.replied', { turn: 't-1', step: 0, content: 'hi', toolCalls: [] }, 32),
    ]);
    // The companion has folded the turn up to its reply; its end is committed, announced, and nowhere else yet.
    h.companion.setPosition(key, 32);
    const id = responseIdOf(key, 'announced');
    const stream = await fetch(`${h.gateway.url}/v1/responses/${id}?stream=true`);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let sent = '';
    while (!sent.includes('response.output_text.done')) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the stream ended before the reply: ${sent}`);
      sent += chunk.value;
    }
    const end = conversationEvent(key, 'turn.ended', { turn: 't-1', status: 'completed', outcome: null, content: 'hi', steered: [] }, 33);
    const channel = announcementChannel(h.topics.inputs.slice(0, -Topics.inputs.length));
    await db.query('SELECT pg_notify($1, $2)', [channel, JSON.stringify({ conversation: key, after: 32, events: [end] })]);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) sent += chunk.value;
    expect(sent).toContain('event: response.completed');

    const before = h.companion.requests.length;
    const retrieved = h.call(`/v1/responses/${id}`);
    // The retrieve's read reaches the companion before it has folded the end; then it folds it.
    while (!h.companion.requests.slice(before).some((path) => path.includes('/events'))) await sleep(10);
    h.companion.addEvents(key, [end]);
    h.companion.setPosition(key, 33);
    const answer = await retrieved;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id, status: 'completed' });
  });
});
