import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { userTexts } from '@rudder/scripted-model';
import { requestsWith, testScript } from './scripts';
import { readEvents } from './sse';
import { answered, startStack, WAIT, type Stack } from './stack';

/**
 * SPEC "Editing a conversation", Collapse, `{debounceMs}`, on the real stack: a follow-up's turn
 * starts only once the queue was quiet that long, and the follow-ups sent meanwhile are one turn.
 * Nothing waits in memory: the hold is in the conversation's state (`dueAt`), and the worker that
 * owns the partition — another one, after the first was SIGKILLed — starts the turn once.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
});
afterAll(() => stack?.stop());

const key = (name: string) => `debounce/${name}-${Math.random().toString(36).slice(2, 8)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The conversation's stored events, from its start until `done` says it has what it needs. */
async function eventsOf(conversation: string, done: (all: { event: string; data: unknown }[]) => boolean) {
  return readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (_m, all) => done(all));
}
const typesOf = (events: { event: string }[]) => events.map((m) => m.event).filter((t) => ['input.accepted', 'queue.held', 'inputs.collapsed', 'turn.started', 'turn.ended'].includes(t));

describe('queue: {debounceMs}', () => {
  it('follow-ups 100 ms apart with debounce 1000 are one turn holding all, in order, started after the last of them was accepted', async () => {
    const { client, model } = stack;
    const conversation = key('burst');
    const texts = ['pack the tent', 'book the ferry', 'find a campsite', 'buy a map'];
    // Sent 100 ms apart (each when its time comes, not after the one before was answered).
    await Promise.all(texts.map((text, i) => sleep(i * 100).then(() => client.chat(conversation, { text, id: `b${i}`, queue: { debounceMs: 1000 } }))));
    const events = await eventsOf(conversation, (all) => all.some((m) => m.event === 'turn.ended'));
    // Every follow-up was accepted (and merged into the first) before the one turn started.
    expect(typesOf(events)).toEqual([
      'input.accepted',
      'queue.held',
      ...['input.accepted', 'inputs.collapsed', 'queue.held'],
      ...['input.accepted', 'inputs.collapsed', 'queue.held'],
      ...['input.accepted', 'inputs.collapsed', 'queue.held'],
      'turn.started',
      'turn.ended',
    ]);
    // In order: the order they were accepted in (concurrent sends may reach the worker in another).
    const order = events.filter((m) => m.event === 'input.accepted').map((m) => (m.data as { data: { input: { id: string; text: string } } }).data.input);
    expect(order.map((input) => input.text).sort()).toEqual([...texts].sort());
    const [first, ...rest] = order;
    const merges = events.filter((m) => m.event === 'inputs.collapsed').map((m) => (m.data as { data: unknown }).data);
    expect(merges).toEqual(rest.map((input) => ({ into: first!.id, from: [input.id], policy: 'merge' })));
    const turn = await answered(client, conversation, first!.id);
    expect(turn.status).toBe('completed');
    for (const input of rest) expect((await client.turnOf(conversation, input.id)).id).toBe(turn.id);
    // One model request, its prompt all four messages in that order.
    const asked = model.requests.filter((r) => texts.some((text) => userTexts(r).includes(text)));
    expect(asked).toHaveLength(1);
    expect(userTexts(asked[0]!).slice(-4)).toEqual(order.map((input) => input.text));
  });

  it('a follow-up sent after the quiet ended (the first turn started) is a turn of its own', async () => {
    const { client } = stack;
    const conversation = key('gap');
    await client.chat(conversation, { text: 'first thought', id: 'g1', queue: { debounceMs: 1000 } });
    await vi.waitFor(async () => expect((await stack.http.get(conversation, '/turns?input=g1')).status).toBe(200), WAIT);
    await client.chat(conversation, { text: 'second thought', id: 'g2', queue: { debounceMs: 1000 } });
    const [first, second] = [await answered(client, conversation, 'g1'), await answered(client, conversation, 'g2')];
    expect(second.id).not.toBe(first.id);
    expect([first.content, second.content]).toEqual(['answer to first thought', 'answer to second thought']);
    const events = await eventsOf(conversation, (all) => all.filter((m) => m.event === 'turn.ended').length === 2);
    expect(events.filter((m) => m.event === 'inputs.collapsed')).toEqual([]);
  });

  it('a chat debounceMs outside 0 < d ≤ 60000, or not a whole number, is 400 naming the bound, and nothing is produced', async () => {
    const conversation = key('hostile');
    for (const queue of [{ debounceMs: 0 }, { debounceMs: -5 }, { debounceMs: 60_001 }, { debounceMs: 1.5 }, { debounceMs: '1000' }, { debounceMs: 1000, extra: true }, {}]) {
      const answer = await stack.http.post(conversation, '/chat', { text: 'hi', queue });
      expect(answer.status, JSON.stringify(queue)).toBe(400);
      if (typeof queue.debounceMs === 'number' && Number.isInteger(queue.debounceMs) && !('extra' in queue)) expect(answer.body.error.message).toContain('at most 60000');
    }
    // Nobody wrote to it: nothing was produced.
    expect((await stack.http.get(conversation, '')).status).toBe(404);
  });

  it('a worker SIGKILLed while a debounce waits: the turn still starts once, after another worker takes the partition', async () => {
    const { client } = stack;
    const conversation = key('crash');
    // Longer than the takeover (the dead member's session must time out first, then the new
    // worker starts): the next owner starts the turn from the stored due time, by its own timer.
    await client.chat(conversation, { text: 'held through a crash', id: 'k1', queue: { debounceMs: 45_000 } });
    await client.chat(conversation, { text: 'and this too', id: 'k2', queue: { debounceMs: 45_000 } });
    const held = await eventsOf(conversation, (all) => all.filter((m) => m.event === 'queue.held').length === 2);
    const until = Date.parse((held.filter((m) => m.event === 'queue.held').at(-1)!.data as { data: { until: string } }).data.until);
    const [doomed] = stack.workers.splice(0);
    await doomed!.kill('SIGKILL');
    await stack.startWorker();
    // The scenario's precondition, not a speed claim: the new owner took the partition while the hold still waited.
    expect(Date.now()).toBeLessThan(until);
    // The status says why nothing runs yet: the hold, until the last follow-up's quiet ends.
    expect(await client.status(conversation)).toMatchObject({ running: null, queue: [{ id: 'k1' }], heldUntil: new Date(until).toISOString() });
    const turn = await answered(client, conversation, 'k1', 90_000);
    expect(turn).toMatchObject({ status: 'completed' });
    expect((await client.turnOf(conversation, 'k2')).id).toBe(turn.id);
    const events = await eventsOf(conversation, (all) => all.some((m) => m.event === 'turn.ended'));
    expect(events.filter((m) => m.event === 'turn.started')).toHaveLength(1);
    expect(requestsWith(stack.model.requests, 'and this too')).toHaveLength(1);
    // The test waits out the 45 s hold itself: its time is the hold's, not a machine's speed.
  }, 120_000);
});
