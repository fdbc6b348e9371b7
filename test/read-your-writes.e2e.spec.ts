import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '@rudder/gateway';
import type { ConversationStatus } from '@rudder/contracts';
import { readConfig } from '@rudder/runtime';
import { createHttp } from './http';
import { gateName, testScript } from './scripts';
import { holding, startStack, type Stack } from './stack';

/**
 * SPEC "Access and consistency": every answer to a write carries the log position it
 * produced; a read through the same gateway, or one that passes that position, reflects at
 * least that write. The writes and reads here are raw (http.ts): `@rudder/client` sends its own
 * `Rudder-Min-Position` on reads, which would prove the header, not the gateway.
 */
let stack: Stack;
let other: RunningGateway;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
  other = await startGateway(readConfig({ ...stack.env, GATEWAY_PORT: '0', COMPANION_URL: stack.companionUrl }));
});
afterAll(async () => {
  await other?.stop();
  await stack?.stop();
});

const key = (name: string) => `ryw/${name}-${Math.random().toString(36).slice(2, 8)}`;
/** Where an input shows in a status: waiting, or running as the prompt of the turn (then its turn is found). */
const shows = (status: { queue: { id: string }[]; running: unknown; lastInputId: string | null }, id: string) => status.lastInputId === id;

describe('read your writes', () => {
  it('right after a chat answered 202, the status through the same gateway shows it (looped)', async () => {
    for (let round = 0; round < 15; round++) {
      const conversation = key(`chat-${round}`);
      // Its model reply is held at a gate: the turn cannot have ended by the time of the read.
      const gate = gateName(`ryw-${round}`);
      const chat = await stack.http.post(conversation, '/chat', { text: `hold gate:${gate}`, id: `c-${round}` });
      expect(chat.status).toBe(202);
      expect(Number(chat.headers.get('rudder-position'))).toBeGreaterThan(0);
      const status = (await stack.http.get<ConversationStatus>(conversation)).body;
      expect(shows(status, `c-${round}`), JSON.stringify(status)).toBe(true);
      expect(status.queue.some((q) => q.id === `c-${round}`) || status.running !== null, JSON.stringify(status)).toBe(true);
      stack.model.gate(gate).open();
    }
  });

  it('a read through another gateway that passes Rudder-Min-Position shows the write too', async () => {
    const elsewhere = createHttp(other.url);
    for (let round = 0; round < 10; round++) {
      const conversation = key(`elsewhere-${round}`);
      const chat = await stack.http.post(conversation, '/chat', { text: 'hello', id: `e-${round}` });
      const position = chat.headers.get('rudder-position')!;
      const answer = await fetch(`${other.url}/v1/conversations/${encodeURIComponent(conversation)}`, { headers: { 'rudder-min-position': position } });
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as { lastInputId: string }).lastInputId).toBe(`e-${round}`);
    }
    // Without a position to wait for, another gateway answers at once: a key nobody wrote to has nothing to read.
    expect((await elsewhere.get(key('nothing'))).status).toBe(404);
  });

  it('right after a steer and a stop answered, the status and the turn show them', async () => {
    const conversation = key('steer');
    const { turn } = await holding(stack, conversation);
    const steer = await stack.http.post(conversation, '/steer', { text: 'use Celsius', id: 's' });
    expect(steer.body).toMatchObject({ landed: true });
    expect((await stack.http.get<ConversationStatus>(conversation)).body.steering).toEqual([{ id: 's', text: 'use Celsius', revision: 0 }]);
    const stop = await stack.http.post(conversation, '/stop', { turn: turn.id });
    expect(stop.body).toEqual({ turn: turn.id });
    expect(Number(stop.headers.get('rudder-position'))).toBeGreaterThan(Number(steer.headers.get('rudder-position')));
  });

  it('right after a retraction, a promotion and a grant answered, the status shows each (looped)', async () => {
    for (let round = 0; round < 5; round++) {
      const conversation = key(`controls-${round}`);
      const held = await holding(stack, conversation);
      await stack.http.post(conversation, '/chat', { text: 'later one', id: 'l1' });
      await stack.http.post(conversation, '/chat', { text: 'later two', id: 'l2' });
      expect((await stack.http.delete(conversation, '/inputs/l1')).status).toBe(200);
      expect((await stack.http.get<ConversationStatus>(conversation)).body.queue.map((q) => q.id)).toEqual(['l2']);
      expect((await stack.http.post(conversation, '/inputs/l2/promote')).body).toMatchObject({ landed: true });
      expect((await stack.http.get<ConversationStatus>(conversation)).body).toMatchObject({ queue: [], steering: [{ id: 'l2', text: 'later two' }] });
      expect((await stack.http.put(conversation, '/grants/carol', { access: 'read' })).status).toBe(200);
      expect((await stack.http.get<ConversationStatus>(conversation)).body.grants).toEqual([{ subject: 'carol', access: 'read' }]);
      held.open();
    }
  });

  it('a position that is not a non-negative integer is 400', async () => {
    const answer = await fetch(`${stack.gatewayUrl}/v1/conversations/x`, { headers: { 'rudder-min-position': '-1' } });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('bad_request');
  });
});
