import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastMessage, lastUserText, offersTool, reply, userTexts, type ModelRequest, type Script } from '@rudder/scripted-model';
import { HANDOFF_INSTRUCTIONS } from './agents/handoffs';
import { gateName, requestsAbout, requestsWith, testScript } from './scripts';
import { readEvents } from './sse';
import { answered, startStack, WAIT, type Stack } from './stack';

/**
 * SPEC "Time and agents", handoffs, on the real stack: the test worker app's `triage` and
 * `specialist` hand conversations to each other; `filtering` hands to `specialist` with a
 * filter that drops every tool output and the earlier turns (test/agents/worker.ts). Whose a
 * request is, the scripted model reads from its system prompt (`HANDOFF_INSTRUCTIONS`).
 *
 * The script: `hand to <agent> …` calls `transfer_to_<agent>`; the request after that call's
 * result answers `<agent of the request> took over` (held at `gate-after:<name>` when the
 * message names one). Anything else is the suite's script (test/scripts.ts).
 */
const agentOf = (request: ModelRequest) => {
  const system = request.body.messages[0]?.content;
  return Object.entries(HANDOFF_INSTRUCTIONS).find(([, instructions]) => instructions === system)?.[0];
};
const script: Script = (request) => {
  const hand = /^hand to ([\w.-]+)(.*)$/.exec(lastUserText(request));
  if (!hand) return testScript(request);
  if (lastMessage(request)?.role !== 'tool') return reply.tools([{ name: `transfer_to_${hand[1]}`, arguments: {} }]);
  return reply.text(`${agentOf(request)} took over`, { gate: /gate-after:([\w.-]+)/.exec(hand[2])?.[1] });
};

const key = (name: string) => `handoffs/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** How many times `text` is a user message of `request`. */
const times = (request: ModelRequest, text: string) => userTexts(request).filter((t) => t === text).length;

/** Every call of the request's assistant messages is answered by a tool message right after it, and every tool message answers one. */
function everyCallAnswered(request: ModelRequest): boolean {
  let open = new Set<string>();
  for (const message of request.body.messages) {
    if (message.role === 'tool') {
      if (!open.delete(message.tool_call_id)) return false;
      continue;
    }
    if (open.size > 0) return false;
    open = new Set(message.role === 'assistant' ? (message.tool_calls ?? []).map((c) => c.id) : []);
  }
  return open.size === 0;
}

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script, workers: 0, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

/** The conversation's `agent.changed` events on its stream, read from its start until `turns` turns ended. */
const handoffs = async (conversation: string, turns: number) =>
  (await readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (_, all) => all.filter((m) => m.event === 'turn.ended').length >= turns))
    .filter((m) => m.event === 'agent.changed')
    .map((m) => (m.data as { data: { from: string; to: string; turn: string; step: number; rollback?: string } }).data);

describe('a handoff on a running worker', () => {
  beforeAll(async () => {
    await stack.startWorker();
  });
  afterAll(() => stack.stopWorkers());

  it("a steer before the handoff reaches triage's next request once, one after it the specialist's; the rest of the turn runs the specialist", async () => {
    const { client, model } = stack;
    const conversation = key('steers');
    const tool = gateName('tool');
    const after = gateName('after');
    const before = `hand to specialist gate-after:${after}`;
    const later = 'and one more thing for the specialist';
    await client.chat(conversation, { text: `look it up tool-gate:${tool}`, id: 'p', agent: 'triage' });
    await model.gate(tool).reached();
    expect(await client.steer(conversation, { text: before, id: 's1' })).toMatchObject({ landed: true });
    model.gate(tool).open();
    // The specialist's first reply is held: the conversation is its own now.
    await model.gate(after).reached();
    await vi.waitFor(async () => expect((await client.status(conversation)).agent).toBe('specialist'), WAIT);
    expect(await client.steer(conversation, { text: later, id: 's2' })).toMatchObject({ landed: true });
    model.gate(after).open();
    const turn = await answered(client, conversation, 'p');
    expect(turn.status).toBe('completed');
    expect(turn.steered.map((s) => s.id)).toEqual(['s1', 's2']);
    expect(turn.content).toBe(`waiting for look it up tool-gate:${tool}\n\nspecialist took over\n\nanswer to ${later}`);

    const asked = requestsWith(model.requests, `look it up tool-gate:${tool}`);
    expect(asked.map(agentOf)).toEqual(['triage', 'triage', 'specialist', 'specialist']);
    // Each steer is in the first request after it was taken — triage's, then the specialist's — and once in every request after.
    const withBefore = asked.filter((r) => times(r, before) > 0);
    expect(withBefore.map(agentOf)).toEqual(['triage', 'specialist', 'specialist']);
    expect(withBefore.map((r) => times(r, before))).toEqual([1, 1, 1]);
    const withLater = asked.filter((r) => times(r, later) > 0);
    expect(withLater.map(agentOf)).toEqual(['specialist']);
    expect(times(withLater[0], later)).toBe(1);
    // Each agent's requests offer its own transfer tool; every request carries each call with its output.
    expect(asked.map((r) => [offersTool(r, 'transfer_to_specialist'), offersTool(r, 'transfer_to_triage')])).toEqual([
      [true, false],
      [true, false],
      [false, true],
      [false, true],
    ]);
    expect(asked.every(everyCallAnswered)).toBe(true);
    expect(asked[2].body.messages.slice(-2)).toMatchObject([
      { role: 'assistant', tool_calls: [{ function: { name: 'transfer_to_specialist' } }] },
      { role: 'tool', content: 'transferred to specialist' },
    ]);

    expect(await handoffs(conversation, 1)).toEqual([{ from: 'triage', to: 'specialist', turn: turn.id, step: 1 }]);
  });

  it('a later turn runs the agent the conversation was handed to, until it hands back; a chat naming another agent is agent_mismatch', async () => {
    const { client, http, model } = stack;
    const conversation = key('back');
    await client.chat(conversation, { text: 'hand to specialist, please', id: 'c1', agent: 'triage' });
    expect((await answered(client, conversation, 'c1')).content).toBe('specialist took over');
    const named = await http.post(conversation, '/chat', { text: 'hello', id: 'c2', agent: 'triage' });
    expect(named.status).toBe(409);
    expect(named.body.error).toMatchObject({ code: 'agent_mismatch', message: expect.stringContaining('answered by specialist') });
    await client.chat(conversation, { text: 'a question', id: 'c3', agent: 'specialist' });
    await answered(client, conversation, 'c3');
    expect(requestsAbout(model.requests, 'a question').map(agentOf)).toEqual(['specialist']);
    await client.chat(conversation, { text: 'hand to triage again', id: 'c4' });
    expect((await answered(client, conversation, 'c4')).content).toBe('triage took over');
    expect((await client.status(conversation)).agent).toBe('triage');
    expect((await http.post(conversation, '/chat', { text: 'hello', id: 'c5', agent: 'specialist' })).status).toBe(409);
    expect((await handoffs(conversation, 3)).map((h) => [h.from, h.to])).toEqual([
      ['triage', 'specialist'],
      ['specialist', 'triage'],
    ]);
  });

  it('a rollback of the turn that handed on hands the conversation back: the next turn runs the agent before it, and a chat naming that agent is accepted', async () => {
    const { client, http, model } = stack;
    const conversation = key('rollback');
    await client.chat(conversation, { text: 'a first question', id: 'c1', agent: 'triage' });
    await answered(client, conversation, 'c1');
    await client.chat(conversation, { text: 'hand to specialist, then take it back', id: 'c2' });
    const handed = await answered(client, conversation, 'c2');
    expect((await client.status(conversation)).agent).toBe('specialist');
    expect(await client.rollback(conversation, { turns: 1, id: 'rb1' })).toEqual({ turns: [handed.id], stopped: null });
    // Read right after the rollback's answer: the conversation is triage's again.
    expect((await client.status(conversation)).agent).toBe('triage');
    const accepted = await http.post(conversation, '/chat', { text: 'a question after the rollback', id: 'c3', agent: 'triage' });
    expect(accepted.status).toBe(202);
    await answered(client, conversation, 'c3');
    expect(requestsAbout(model.requests, 'a question after the rollback').map(agentOf)).toEqual(['triage']);
    expect((await handoffs(conversation, 3)).map((h) => [h.from, h.to, h.turn, h.rollback])).toEqual([
      ['triage', 'specialist', handed.id, undefined],
      ['specialist', 'triage', handed.id, 'rb1'],
    ]);
  });

  it('a handoff filter that drops every tool output still sends each call with its output; the history it drops is not sent', async () => {
    const { client, model } = stack;
    const conversation = key('filter');
    await client.chat(conversation, { text: 'an earlier question', id: 'e', agent: 'filtering' });
    await answered(client, conversation, 'e');
    const text = 'hand to specialist, without the history';
    await client.chat(conversation, { text, id: 'h' });
    const turn = await answered(client, conversation, 'h');
    expect(turn).toMatchObject({ status: 'completed', content: 'specialist took over' });
    const asked = requestsWith(model.requests, text);
    expect(asked.map(agentOf)).toEqual(['filtering', 'specialist']);
    // The filtering desk's own request carries the earlier turn; the specialist's, only what the filter kept and the output it dropped.
    expect(userTexts(asked[0])).toEqual(['an earlier question', text]);
    const request = asked[1];
    expect(everyCallAnswered(request)).toBe(true);
    expect(request.body.messages.slice(1)).toMatchObject([
      { role: 'user', content: text },
      { role: 'assistant', tool_calls: [{ function: { name: 'transfer_to_specialist' } }] },
      { role: 'tool', content: 'transferred to specialist' },
    ]);
  });
});

describe('a worker killed right after the handoff was stored', () => {
  afterAll(() => stack.stopWorkers());

  it('the next worker goes on with the agent the conversation was handed to, asking nothing again', async () => {
    const { client, model } = stack;
    const conversation = key('crash');
    const doomed = await stack.startWorker({ CRASH_AT: 'after-handoff-stored' });
    const text = 'hand to specialist, then crash';
    await client.chat(conversation, { text, id: 'k', agent: 'triage' });
    await doomed.exited;
    expect(doomed.child.signalCode).toBe('SIGKILL');
    expect(doomed.output()).toContain('crashing at after-handoff-stored');
    await stack.startWorker();
    const turn = await answered(client, conversation, 'k', 60_000);
    expect(turn).toMatchObject({ status: 'completed', content: 'specialist took over' });
    // Triage's transfer was asked once and stored: the successor's run is the specialist's.
    expect(requestsWith(model.requests, text).map(agentOf)).toEqual(['triage', 'specialist']);
    await vi.waitFor(async () => expect((await client.status(conversation)).agent).toBe('specialist'), WAIT);
    expect(await handoffs(conversation, 1)).toEqual([{ from: 'triage', to: 'specialist', turn: turn.id, step: 0 }]);
  });
});
