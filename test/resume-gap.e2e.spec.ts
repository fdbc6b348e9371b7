import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { testScript } from './scripts';
import { createHttp } from './http';
import { readEvents, sseMessages, type SseMessage } from './sse';
import { answered, startStack, type Stack } from './stack';

/**
 * SPEC "The event stream": a resume delivers every event after `Last-Event-ID`, in order, or
 * fails with an error the client retries; it never skips one. The case that skipped: the
 * companion (the store a resume replays from) lags behind `agent.events`, and the gateway the
 * client resumes on no longer keeps those events (here: a gateway started after they were
 * published). The companion's lag is real: the test holds a lock on the conversation's row
 * in the companion's tables, so its fold waits while its reads still answer.
 */
let stack: Stack;
let late: RunningGateway | undefined;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(async () => {
  await late?.stop();
  await stack?.stop();
});

type Accepted = { data: { input: { id: string } } };
const acceptedIds = (messages: SseMessage[]) => messages.filter((m) => m.event === 'input.accepted').map((m) => (m.data as Accepted).data.input.id);

describe('a resume while the companion lags', () => {
  it('delivers the events the companion had not folded, before the ones after them, none skipped', async () => {
    const { client, http } = stack;
    const conversation = `resume-gap/${Math.random().toString(36).slice(2, 8)}`;
    await client.chat(conversation, { text: 'first', id: 'c1' });
    await answered(client, conversation, 'c1');
    const history = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    const cursor = history.filter((m) => m.event !== 'token').at(-1)!.id!;

    // The companion's fold waits on the conversation's row from here on; its reads still answer.
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('SELECT 1 FROM companion.conversations WHERE key = $1 FOR UPDATE', [conversation]);

      const live = readEvents(await http.events(conversation), (m) => m.event === 'turn.ended');
      await client.chat(conversation, { text: 'second', id: 'c2' });
      expect(acceptedIds(await live)).toEqual(['c2']); // published, and folded nowhere yet

      // A gateway that starts now never saw c2's events; the companion does not have them either.
      late = await startGateway(readConfig({ ...stack.env, GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
      const resumed = await fetch(`${late.url}/v1/conversations/${encodeURIComponent(conversation)}/events`, { headers: { 'last-event-id': cursor } });
      expect(resumed.status).toBe(200);
      const reader = sseMessages(resumed).getReader();

      // Through the late gateway: the first one answered c2, so its reads of the conversation
      // (the chat's idempotency check among them) wait for the companion to show c2.
      expect((await createHttp(late.url).post(conversation, '/chat', { text: 'third', id: 'c3' })).status).toBe(202);
      await db.query('ROLLBACK'); // the companion catches up

      const messages: SseMessage[] = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        messages.push(value);
        if (acceptedIds(messages).includes('c3') && value.event === 'turn.ended') break;
      }
      await reader.cancel();
      expect(acceptedIds(messages)).toEqual(['c2', 'c3']);
      const positions = messages.filter((m) => m.event !== 'token').map((m) => Number(m.id));
      expect(positions.every((p, i) => i === 0 || p > positions[i - 1])).toBe(true);
      expect(positions[0]).toBeGreaterThan(Number(cursor));
    } finally {
      await db.query('ROLLBACK').catch(() => undefined);
      await db.end();
    }
  });
});
