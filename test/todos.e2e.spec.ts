import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationEvent, TodoItem } from '@rudder/contracts';
import { topicNames } from '@rudder/runtime';
import { messageText, offersTool, type ModelRequest } from '@rudder/scripted-model';
import { gateName, requestsAbout, testScript } from './scripts';
import { answered, callerOf, started, startStack, WAIT, type Stack } from './stack';
import { readTopic } from './topic-reader';

/**
 * SPEC "Beside the turn": the agent's plan on the real stack. The test worker app's
 * agents keep a plan (the default agent does); the scripted model's `todos: <changes> ;; …` writes
 * it through the built-in `todos` tool, one call a step (test/scripts.ts).
 */
let stack: Stack;
let alice: ReturnType<typeof callerOf>;
beforeAll(async () => {
  stack = await startStack({
    script: testScript,
    workers: 0,
    workerEntry: 'test/agents/worker.ts',
    workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob' },
  });
  alice = callerOf(stack.gatewayUrl, 'alice-token');
});
afterAll(() => stack?.stop());
// Each test starts the workers it needs: one killed midway leaves none behind for the next.
afterEach(() => stack.stopWorkers());

const key = (name: string) => `todos/${name}-${Math.random().toString(36).slice(2, 8)}`;
const plan = (...steps: unknown[]) => `todos: ${steps.map((s) => (typeof s === 'string' ? s : JSON.stringify(s))).join(' ;; ')}`;
const shown = (items: readonly TodoItem[]) => items.map((i) => `${i.n}. [${i.status}] ${i.text}`);

/** The plan as a model request carries it: the system message right after the instructions, if any. */
function planIn(request: ModelRequest): string[] | null {
  const [instructions, second] = request.body.messages;
  expect(instructions.role).toBe('system');
  if (second?.role !== 'system') return null;
  const [heading, ...lines] = messageText(second).split('\n');
  expect(heading).toMatch(/^Your plan for this conversation/);
  return lines;
}

/** The model requests of the turn whose prompt is `text` (its last user message: nothing is steered into these turns). */
const requestsOf = (text: string) => requestsAbout(stack.model.requests, text);

/** Every stored event of the conversation, from its start until `until` holds. */
async function storedEvents(conversation: string, until: (events: ConversationEvent[]) => boolean): Promise<ConversationEvent[]> {
  const done = new AbortController();
  const events: ConversationEvent[] = [];
  for await (const event of alice.client.events(conversation, { after: 0, signal: done.signal })) {
    if (event.type === 'token') continue;
    events.push(event);
    if (until(events)) done.abort();
  }
  return events;
}

const todosUpdates = (events: readonly ConversationEvent[]) => events.flatMap((e) => (e.type === 'todos.updated' ? [e.data] : []));

describe("the agent's plan", () => {
  it('a multi-step turn writes a plan and ticks it off; it is on the route, the stream, agent.events and the client, and every later request carries it with no call to read it', async () => {
    await stack.startWorker();
    const conversation = key('ticks');
    const text = plan({ add: ['fetch the forfaits list', 'migrate the forfaits-* fetchers', 'check archived ones'] }, { set: [{ n: 1, status: 'done' }, { n: 2, status: 'in_progress' }] }, { set: [{ n: 2, status: 'done' }] });
    const following = new AbortController();
    const seen: string[][] = [];
    const followed = alice.client.chat(conversation, { text, id: 'p1' }).then(() =>
      alice.client.onTodos(conversation, (items) => seen.push(shown(items)), { signal: following.signal }).catch(() => undefined),
    );
    const turn = await answered(alice.client, conversation, 'p1');
    expect(turn).toMatchObject({ status: 'completed', content: `planned: ${text}` });
    const final = ['1. [done] fetch the forfaits list', '2. [done] migrate the forfaits-* fetchers', '3. [pending] check archived ones'];

    const route = await alice.client.todos(conversation);
    expect(shown(route.items)).toEqual(final);
    expect((await alice.http.get(conversation, '/todos')).status).toBe(200);

    // Each call's change is stored once, with its result, as the whole list.
    const events = await storedEvents(conversation, (all) => all.some((e) => e.type === 'turn.ended'));
    const updates = todosUpdates(events);
    expect(updates.map((u) => shown(u.items))).toEqual([
      ['1. [pending] fetch the forfaits list', '2. [pending] migrate the forfaits-* fetchers', '3. [pending] check archived ones'],
      ['1. [done] fetch the forfaits list', '2. [in_progress] migrate the forfaits-* fetchers', '3. [pending] check archived ones'],
      final,
    ]);
    expect(updates.map((u) => u.next)).toEqual([4, 4, 4]);
    const results = events.flatMap((e) => (e.type === 'tool.ended' ? [e] : []));
    expect(results.map((r) => [r.data.name, r.data.isError])).toEqual([['todos', false], ['todos', false], ['todos', false]]);
    // A change is stored right after its call's result.
    for (const update of events.filter((e) => e.type === 'todos.updated')) {
      const before = events[events.indexOf(update) - 1];
      expect(before).toMatchObject({ type: 'tool.ended', data: { callId: update.type === 'todos.updated' ? update.data.callId : '' } });
    }

    // On agent.events for integrations: the same changes.
    const records = await readTopic(stack.env.KAFKA_BROKERS, topicNames(stack.env.KAFKA_NAMESPACE).events, conversation, (all) => all.filter((r) => r.value.includes('"todos.updated"')).length >= 3);
    expect(records.map((r) => JSON.parse(r.value) as ConversationEvent).filter((e) => e.type === 'todos.updated').map((e) => e.id)).toEqual(
      events.filter((e) => e.type === 'todos.updated').map((e) => e.id),
    );

    // The client's onTodos: the plan now, then nothing twice.
    await expect.poll(() => seen.at(-1), WAIT).toEqual(final);
    following.abort();
    await followed;
    expect(seen.filter((s) => JSON.stringify(s) === JSON.stringify(final))).toHaveLength(1);

    // Within the turn: the request after each change carries the plan at the top; the first carried none.
    const within = requestsOf(text);
    expect(within.map(planIn)).toEqual([null, shown(updates[0].items), shown(updates[1].items), final]);
    expect(within.every((r) => offersTool(r, 'todos'))).toBe(true);

    // A later turn: its first request carries the plan after the instructions, and asks no read.
    await alice.client.chat(conversation, { text: 'what is left?', id: 'p2' });
    expect(await answered(alice.client, conversation, 'p2')).toMatchObject({ status: 'completed', content: 'answer to what is left?' });
    const later = stack.model.requests.filter((r) => messageText(r.body.messages.at(-1)) === 'what is left?');
    expect(later).toHaveLength(1);
    expect(planIn(later[0])).toEqual(final);
    // Instructions, plan, then the earlier turn and the prompt: the plan stands before the earlier turns.
    expect(later[0].body.messages.map((m) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'user']);
  });

  it("numbers are the conversation's for good: after item 1 is deleted the others keep theirs, and a new item is numbered past the highest ever used", async () => {
    await stack.startWorker();
    const conversation = key('numbers');
    await alice.client.chat(conversation, { text: plan({ add: ['a', 'b', 'c'] }, { delete: [1] }, { add: ['d'] }), id: 'n1' });
    await answered(alice.client, conversation, 'n1');
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['2. [pending] b', '3. [pending] c', '4. [pending] d']);
    // The highest (4) deleted: the next is still 5. An unknown number changes nothing and tells the model so.
    await alice.client.chat(conversation, { text: plan({ delete: [4] }, { add: [{ text: 'e', status: 'in_progress' }] }, { set: [{ n: 1, status: 'done' }] }, 'not json'), id: 'n2' });
    await answered(alice.client, conversation, 'n2');
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['2. [pending] b', '3. [pending] c', '5. [in_progress] e']);
    const events = await storedEvents(conversation, (all) => all.filter((e) => e.type === 'turn.ended').length === 2);
    const refused = events.flatMap((e) => (e.type === 'tool.ended' && e.data.isError ? [e.data.result] : []));
    expect(refused).toEqual([expect.stringMatching(/^error: there is no item 1 on the plan \(the plan is unchanged\)$/), expect.stringMatching(/^error: invalid arguments/)]);
    expect(todosUpdates(events)).toHaveLength(5);
  });

  it('a worker killed mid-turn: the plan is intact and numbered the same, each change stored once, and the next request carries it with no read call', async () => {
    const doomed = await stack.startWorker();
    const conversation = key('killed');
    const gate = gateName('plan-kill');
    const text = plan({ add: ['one', 'two'] }, { set: [{ n: 1, status: 'done' }] }, `hold:${gate}`, { set: [{ n: 2, status: 'done' }] });
    await alice.client.chat(conversation, { text, id: 'k1' });
    await stack.model.gate(gate).reached();
    await doomed.kill('SIGKILL');
    await stack.startWorker();
    // The held call had no result stored: the next worker runs it again.
    await stack.model.gate(gate).reached(2);
    stack.model.gate(gate).open();
    expect(await answered(alice.client, conversation, 'k1', 60_000)).toMatchObject({ status: 'completed', content: `planned: ${text}` });
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['1. [done] one', '2. [done] two']);
    const events = await storedEvents(conversation, (all) => all.some((e) => e.type === 'turn.ended'));
    expect(todosUpdates(events).map((u) => shown(u.items))).toEqual([['1. [pending] one', '2. [pending] two'], ['1. [done] one', '2. [pending] two'], ['1. [done] one', '2. [done] two']]);
    // The request after the held call's result (asked by the new worker) carries the plan as stored before the kill.
    const afterHold = requestsOf(text).filter((r) => r.body.messages.some((m) => m.role === 'tool' && messageText(m) === `held at ${gate}`));
    expect(afterHold.map(planIn)).toEqual([['1. [done] one', '2. [pending] two'], ['1. [done] one', '2. [done] two']]);
    // No call was made to read the plan back: every todos call changed it.
    const calls = events.flatMap((e) => (e.type === 'tool.started' ? [e.data.call] : []));
    expect(calls.map((c) => c.name)).toEqual(['todos', 'todos', 'hold', 'todos']);
  });

  it("a rolled-back turn's changes to the plan are undone with it; its numbers stay used", async () => {
    await stack.startWorker();
    const conversation = key('rollback');
    await alice.client.chat(conversation, { text: plan({ add: ['kept'] }), id: 'r1' });
    await answered(alice.client, conversation, 'r1');
    const gate = gateName('plan-rollback');
    await alice.client.chat(conversation, { text: plan({ add: ['dropped'], set: [{ n: 1, status: 'done' }] }, `hold:${gate}`), id: 'r2' });
    await started(alice.client, conversation, 'r2');
    await stack.model.gate(gate).reached();
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['1. [done] kept', '2. [pending] dropped']);
    await alice.client.chat(conversation, { text: plan({ add: ['after'] }), id: 'r3', onBusy: 'rollback' });
    expect(await answered(alice.client, conversation, 'r2')).toMatchObject({ status: 'stopped' });
    await answered(alice.client, conversation, 'r3');
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['1. [pending] kept', '3. [pending] after']);
    const events = await storedEvents(conversation, (all) => all.filter((e) => e.type === 'turn.ended').length === 3);
    const undone = events.filter((e) => e.type === 'todos.updated' && e.data.callId === null);
    expect(undone).toHaveLength(1);
    // Stored with the rolled-back turn's end, just before it.
    const end = events.find((e) => e.type === 'turn.ended' && e.data.status === 'stopped')!;
    expect(events.indexOf(end) - events.indexOf(undone[0])).toBe(1);
    // The rolled-back turn's plan is not what the next turn's model saw.
    const next = requestsOf(plan({ add: ['after'] }));
    expect(planIn(next[0])).toEqual(['1. [pending] kept']);
  });

  it('a rollback of ended turns undoes their changes to the plan: as before the first of them, numbers kept used; the next request has that plan', async () => {
    await stack.startWorker();
    const conversation = key('rollback-ended');
    await alice.client.chat(conversation, { text: plan({ add: ['kept'] }), id: 'e1' });
    const first = await answered(alice.client, conversation, 'e1');
    await alice.client.chat(conversation, { text: plan({ add: ['dropped'], set: [{ n: 1, status: 'done' }] }), id: 'e2' });
    await answered(alice.client, conversation, 'e2');
    await alice.client.chat(conversation, { text: plan({ add: ['dropped too'] }), id: 'e3' });
    await answered(alice.client, conversation, 'e3');
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['1. [done] kept', '2. [pending] dropped', '3. [pending] dropped too']);
    expect((await alice.client.rollback(conversation, { toTurn: first.id })).turns).toHaveLength(2);
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['1. [pending] kept']);
    await alice.client.chat(conversation, { text: plan({ add: ['after'] }), id: 'e4' });
    await answered(alice.client, conversation, 'e4');
    expect(shown((await alice.client.todos(conversation)).items)).toEqual(['1. [pending] kept', '4. [pending] after']);
    expect(planIn(requestsOf(plan({ add: ['after'] }))[0])).toEqual(['1. [pending] kept']);
  });

  it('reading it needs read: 404 for a key nobody owns, 403 for another subject, 200 once granted', async () => {
    await stack.startWorker();
    const conversation = key('access');
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    expect((await bob.http.get(conversation, '/todos')).status).toBe(404);
    await alice.client.chat(conversation, { text: plan({ add: ['private'] }), id: 'a1' });
    await answered(alice.client, conversation, 'a1');
    const refused = await bob.http.get(conversation, '/todos');
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).not.toContain('private');
    await alice.client.grant(conversation, 'bob', 'read');
    await expect.poll(async () => (await bob.http.get(conversation, '/todos')).body.items, WAIT).toEqual([{ n: 1, text: 'private', status: 'pending' }]);
  });
});
