import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { answered, WAIT, holding, startStack, type Stack } from './stack';
import { requestsAbout, requestsWith, testScript } from './scripts';

/** Rows of the SPEC's steering table that depend on the agent: the cap, and turns that take none. */

const key = (name: string) => `${name}/${Math.random().toString(36).slice(2, 8)}`;

describe('past a turn cap of steered messages (here 1)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ script: testScript, workerEnv: { STEERS_PER_TURN: '1' } });
  });
  afterAll(() => stack?.stop());

  it('a steer past the cap is answered as a turn of its own, after the running turn, in order', async () => {
    const { client, model } = stack;
    const conversation = key('cap');
    const held = await holding(stack, conversation);
    expect(await client.steer(conversation, { text: 'first steer', id: 's1' })).toEqual({ id: 's1', turn: held.turn.id, landed: true });
    expect(await client.steer(conversation, { text: 'second steer', id: 's2' })).toEqual({ id: 's2', turn: null, landed: false });
    await client.chat(conversation, { text: 'a chat after both', id: 'c' });
    const queue = await vi.waitFor(async () => {
      const body = await client.status(conversation);
      expect(body.queue).toHaveLength(2);
      return body.queue;
    }, WAIT);
    expect(queue.map((q) => [q.id, q.kind])).toEqual([
      ['s2', 'steer'],
      ['c', 'chat'],
    ]);
    held.open();
    const first = await answered(client, conversation, 'p');
    expect(first.steered).toEqual([{ id: 's1', text: 'first steer' }]);
    const own = await answered(client, conversation, 's2');
    const chat = await answered(client, conversation, 'c');
    expect(own.prompt).toEqual({ id: 's2', text: 'second steer' });
    expect(Date.parse(own.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.endedAt!));
    expect(Date.parse(chat.startedAt)).toBeGreaterThanOrEqual(Date.parse(own.endedAt!));
    // The running turn's requests never held the second steer: the first one is the turn of its own.
    expect(requestsWith(model.requests, 'second steer')[0].body.messages.slice(1)).toEqual([
      { role: 'user', content: held.text },
      { role: 'user', content: 'first steer' },
      { role: 'assistant', content: `answer to ${held.text}` },
      { role: 'assistant', content: 'answer to first steer' },
      { role: 'user', content: 'second steer' },
    ]);
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
    const conversation = key('none');
    const held = await holding(stack, conversation);
    expect(await client.steer(conversation, { text: 'not now', id: 's' })).toEqual({ id: 's', turn: null, landed: false });
    held.open();
    const first = await answered(client, conversation, 'p');
    expect(first.steered).toEqual([]);
    expect(first.content).toBe(`answer to ${held.text}`);
    const own = await answered(client, conversation, 's');
    expect(own.prompt).toEqual({ id: 's', text: 'not now' });
    expect(Date.parse(own.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.endedAt!));
    // The running turn was asked once, without it; the steer's own turn once, after the whole first turn.
    expect(requestsAbout(model.requests, held.text)).toHaveLength(1);
    const withSteer = requestsWith(model.requests, 'not now');
    expect(withSteer.map((r) => r.body.messages.slice(1))).toEqual([
      [
        { role: 'user', content: held.text },
        { role: 'assistant', content: `answer to ${held.text}` },
        { role: 'user', content: 'not now' },
      ],
    ]);
  });
});

describe('the default cap: a turn takes at most 16 steered messages', () => {
  let stack: Stack;
  beforeAll(async () => {
    // STEERS_PER_TURN unset (16); the pending bound raised so 17 steers can wait for one step.
    stack = await startStack({ script: testScript, workerEnv: { MAX_PENDING_STEERS: '20' } });
  });
  afterAll(() => stack?.stop());

  it('the 17th steer to a running turn is answered as a turn of its own; the turn takes the first 16 in one step', async () => {
    const { client, model } = stack;
    const conversation = key('default-cap');
    const held = await holding(stack, conversation);
    const ids = Array.from({ length: 17 }, (_, i) => `s${i + 1}`);
    const answers = [];
    for (const id of ids) answers.push(await client.steer(conversation, { text: `steer ${id}`, id }));
    expect(answers.slice(0, 16)).toEqual(ids.slice(0, 16).map((id) => ({ id, turn: held.turn.id, landed: true })));
    expect(answers[16]).toEqual({ id: 's17', turn: null, landed: false });
    held.open();
    const ended = await answered(client, conversation, 'p');
    expect(ended.steered.map((s) => s.id)).toEqual(ids.slice(0, 16));
    const own = await answered(client, conversation, 's17');
    expect(own.prompt).toEqual({ id: 's17', text: 'steer s17' });
    // One more step for the sixteen: one request with all of them, in order, after the first answer.
    const [next] = requestsAbout(model.requests, 'steer s16');
    expect(next.body.messages.slice(1)).toEqual([
      { role: 'user', content: held.text },
      { role: 'assistant', content: `answer to ${held.text}` },
      ...ids.slice(0, 16).map((id) => ({ role: 'user', content: `steer ${id}` })),
    ]);
    expect(requestsWith(model.requests, 'steer s17')).toHaveLength(1);
  });
});
