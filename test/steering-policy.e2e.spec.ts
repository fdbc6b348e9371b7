import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startStack, type Stack } from './stack';
import { requestsWith, testScript } from './scripts';

/** Rows of the SPEC's steering table that depend on the agent: the cap, and turns that take none. */
async function runningTurn(stack: Stack, conversation: string, text: string) {
  await stack.client.chat(conversation, { text, id: 'p' });
  const turn = await stack.client.started(conversation, 'p');
  await eventually(async () => (requestsWith(stack.model.requests, text).length > 0 ? true : undefined));
  return turn;
}

describe('past a turn cap of steered messages (here 1)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ script: testScript, workerEnv: { STEERS_PER_TURN: '1' } });
  });
  afterAll(() => stack?.stop());

  it('a steer past the cap is answered as a turn of its own, after the running turn, in order', async () => {
    const { client } = stack;
    const conversation = `cap/${Date.now()}`;
    const turn = await runningTurn(stack, conversation, 'wait 1500');
    expect((await client.steer(conversation, { text: 'first steer', id: 's1' })).body).toEqual({ id: 's1', turn: turn.id, landed: true });
    expect((await client.steer(conversation, { text: 'second steer', id: 's2' })).body).toEqual({ id: 's2', turn: null, landed: false });
    await client.chat(conversation, { text: 'a chat after both', id: 'c' });
    const queue = await eventually(async () => {
      const { body } = await client.status(conversation);
      return body.queue.length === 2 ? body.queue : undefined;
    });
    expect(queue.map((q) => [q.id, q.kind])).toEqual([
      ['s2', 'steer'],
      ['c', 'chat'],
    ]);
    const first = await client.answered(conversation, 'p');
    expect(first.steered).toEqual([{ id: 's1', text: 'first steer' }]);
    const own = await client.answered(conversation, 's2');
    const chat = await client.answered(conversation, 'c');
    expect(Date.parse(own.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.endedAt!));
    expect(Date.parse(chat.startedAt)).toBeGreaterThanOrEqual(Date.parse(own.endedAt!));
  });
});

describe('an agent whose turns take no steered messages', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ script: testScript, workerEnv: { STEERS_PER_TURN: '0' } });
  });
  afterAll(() => stack?.stop());

  it('answers every steer as a turn of its own, after the running turn', async () => {
    const { client, model } = stack;
    const conversation = `none/${Date.now()}`;
    await runningTurn(stack, conversation, 'wait 800');
    expect((await client.steer(conversation, { text: 'not now', id: 's' })).body).toEqual({ id: 's', turn: null, landed: false });
    const first = await client.answered(conversation, 'p');
    expect(first.steered).toEqual([]);
    const own = await client.answered(conversation, 's');
    expect(own.prompt).toEqual({ id: 's', text: 'not now' });
    expect(Date.parse(own.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.endedAt!));
    // The running turn never showed it to the model.
    expect(requestsWith(model.requests, 'not now').every((r) => r.body.messages.at(-1)?.content === 'not now')).toBe(true);
  });
});
