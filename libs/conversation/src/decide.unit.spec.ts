import { describe, expect, it } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import { endTurn, evolveTurn, nextAction, startTurn } from '@rudder/agent';
import { derivedConversationKey } from './derived-keys';
import { decideInputs, decideTimeouts, decideTurnCommit, startNextTurn, type Agents, type InputPolicy } from './decide';
import { onceKey } from './once-keys';
import { receiptKeys } from './receipts';
import { evolve, hasOpenWork, initialState, parked, type ConversationState } from './state';

const sentAt = '2026-11-30T00:00:00.000Z';
const base = { v: 1 as const, conversation: 'c', subject: 'alice', sentAt };
const chat = (id: string, extra: Partial<Extract<InputRecord, { type: 'chat' }>> = {}): InputRecord => ({ ...base, type: 'chat', id, messages: [id], onBusy: 'enqueue', ...extra });
const steer = (id: string, extra: Partial<Extract<InputRecord, { type: 'steer' }>> = {}): InputRecord => ({ ...base, type: 'steer', id, text: id, ...extra });
const stop = (id: string, discardPending = false): InputRecord => ({ ...base, type: 'stop', id, discardPending });
const retract = (id: string, target: { id: string } | { latest: 'chat' | 'steer' }): InputRecord => ({ ...base, type: 'retract', id, target });
const promote = (id: string, target: string): InputRecord => ({ ...base, type: 'promote', id, target });

const policy: InputPolicy = { maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } };
const agentsWith = (p: InputPolicy): Agents => ({ defaultAgent: 'default', policyOf: (name) => (name === 'default' ? p : undefined) });
/** A conversation its first input opened already (the default agent answers it). */
const idleHead = (): ConversationState => ({ ...initialState(), owner: 'alice', agent: 'default' });
/** The head after these inputs were decided, and the events they made. */
function decide(inputs: InputRecord[], head: ConversationState = idleHead(), p = policy, stored = new Set<string>()) {
  const events = decideInputs(head, inputs, stored, agentsWith(p));
  return { events, head: events.reduce(evolve, head) };
}
/** A head with turn t1 running (started from input p0). */
const running = (p = policy) => {
  const { head } = decide([chat('p0')], idleHead(), p);
  return startNextTurn(head, 't1').reduce(evolve, head);
};
const types = (events: DomainEvent[]) => events.map((e) => e.type);
const decisions = (events: DomainEvent[]) => events.flatMap((e) => (e.type === 'steer.accepted' ? [[e.data.input.id, e.data.turn, e.data.landed]] : []));
const rejections = (events: DomainEvent[]) => events.flatMap((e) => (e.type === 'input.rejected' ? [[e.data.input.id, e.data.code]] : []));

describe('deciding a steer under the conversation lock', () => {
  it('a steer sent while a turn runs lands on that turn', () => {
    expect(decisions(decide([steer('s')], running()).events)).toEqual([['s', 't1', true]]);
  });

  it('a steer sent when no turn runs does not land: it waits as a turn of its own', () => {
    const { events, head } = decide([steer('s')]);
    expect(decisions(events)).toEqual([['s', null, false]]);
    expect(head.queue.map((q) => [q.id, q.kind])).toEqual([['s', 'steer']]);
  });

  it('past the cap, and to an agent whose turns take none, a steer does not land', () => {
    const capped = { ...policy, maxTaken: 1 };
    expect(decisions(decide([steer('a'), steer('b')], running(capped), capped).events)).toEqual([
      ['a', 't1', true],
      ['b', null, false],
    ]);
    const none = { ...policy, maxTaken: 0 };
    expect(decisions(decide([steer('a')], running(none), none).events)).toEqual([['a', null, false]]);
  });

  it('an input handled before, or twice in one batch, adds nothing', () => {
    const events = decide([chat('x'), steer('s'), steer('s')], running(), policy, new Set(['input:x'])).events;
    expect(types(events)).toEqual(['input.accepted', 'steer.accepted']);
  });
});

describe('starting turns and taking steers', () => {
  const prompt = { id: 'p', text: 'p', messages: ['p'], subject: 'alice' };
  const calls = [
    { id: 'c1', name: 'wait', arguments: '{}' },
    { id: 'c2', name: 'wait', arguments: '{}' },
  ];
  const afterReply = evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: calls } });
  const result = (callId: string): DomainEvent => ({ type: 'tool.ended', data: { turn: 't1', step: 0, callId, name: 'wait', result: 'ok', isError: false } });
  const waiting = decide([steer('s1'), steer('s2')], running()).head;

  it('the next turn answers the first input waiting, and says it was delivered; none while a turn runs', () => {
    const { head } = decide([chat('a'), chat('b')]);
    expect(types(startNextTurn(head, 't1'))).toEqual(['turn.started', 'input.delivered']);
    expect(startNextTurn(head, 't1')[0]).toMatchObject({ data: { prompt: { id: 'a' } } });
    expect(startNextTurn(running(), 't2')).toEqual([]);
  });

  it('not while a call of the reply is still open', () => {
    expect(decideTurnCommit(waiting, afterReply, [result('c1')])).toEqual([result('c1')]);
  });

  it('with the last result of the reply, after it, in the order they were sent', () => {
    const stored = decideTurnCommit(waiting, evolveTurn(afterReply, result('c1')), [result('c2')]);
    expect(types(stored)).toEqual(['tool.ended', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered']);
    expect(stored[1]).toEqual({ type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } });
  });

  it('with a compaction at a step past the turn’s first reply (they came during its summary request): after it, for the step’s request; not before the first reply, nor while a call is open', () => {
    const compacted = (step: number): DomainEvent => ({
      type: 'history.compacted',
      data: { turn: 't1', step, summary: 'before', through: { turn: 't0', position: 4 }, turns: 1, tokens: 1 },
    });
    const atStep = [result('c1'), result('c2')].reduce(evolveTurn, afterReply);
    const stored = decideTurnCommit(waiting, atStep, [compacted(1)]);
    expect(types(stored)).toEqual(['history.compacted', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered']);
    expect(stored[1]).toEqual({ type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } });
    expect(decideTurnCommit(waiting, startTurn('t1', prompt), [compacted(0)])).toEqual([compacted(0)]);
    expect(decideTurnCommit(waiting, evolveTurn(afterReply, result('c1')), [compacted(1)])).toEqual([compacted(1)]);
  });

  it('with the final answer, instead of ending the turn: it takes one more step', () => {
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    expect(types(decideTurnCommit(waiting, startTurn('t1', prompt), final))).toEqual(['model.replied', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered']);
  });

  it('not when the turn ends stopped or failed: what it did not take waits as turns of their own, in order', () => {
    const stopped: DomainEvent[] = [{ type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: null, content: '', steered: [] } }];
    expect(decideTurnCommit(waiting, startTurn('t1', prompt), stopped)).toEqual(stopped);
    const { head } = decide([chat('later')], waiting);
    expect(stopped.reduce(evolve, head).queue.map((q) => q.id)).toEqual(['s1', 's2', 'later']);
  });

  it('a turn nobody steered stores exactly what it asked to', () => {
    expect(decideTurnCommit(running(), evolveTurn(afterReply, result('c1')), [result('c2')])).toEqual([result('c2')]);
  });
});

describe('queue controls under the conversation lock', () => {
  it('ifSteerable refuses a chat while a turn of an agent that takes no steers runs; otherwise it is an ordinary chat', () => {
    const none = { ...policy, maxTaken: 0 };
    expect(rejections(decide([chat('x', { ifSteerable: true, onBusy: 'interrupt' })], running(none), none).events)).toEqual([['x', 'busy']]);
    expect(types(decide([chat('x', { ifSteerable: true, onBusy: 'interrupt' })], running()).events)).toEqual(['input.accepted', 'stop.requested']);
    expect(types(decide([chat('x', { ifSteerable: true })], idleHead(), none).events)).toEqual(['input.accepted']);
  });

  it('a chat continuing the running turn\'s input winds that turn down and runs next; one continuing a queued input queues behind it and winds nothing down', () => {
    const continuing = decide([chat('r2', { continues: 'p0', ifLastInputId: 'p0' })], running());
    expect(continuing.events.at(-1)).toEqual({ type: 'stop.requested', data: { stop: 'r2', turn: 't1', mode: 'interrupt' } });
    expect(continuing.head.ending).toBe('interrupt');
    const queued = decide([chat('r2'), chat('r3', { continues: 'r2', ifLastInputId: 'r2' })], running());
    expect(types(queued.events)).toEqual(['input.accepted', 'input.accepted']);
    expect(queued.head.ending).toBeNull();
    expect(queued.head.queue.map((q) => q.id)).toEqual(['r2', 'r3']);
    // With no turn running it is an ordinary chat.
    expect(types(decide([chat('r2', { continues: 'p0' })]).events)).toEqual(['input.accepted']);
  });

  it('ifSteerable refuses a continuing chat only where it would wind down a turn of an agent that takes no steers', () => {
    const none = { ...policy, maxTaken: 0 };
    expect(rejections(decide([chat('r2', { continues: 'p0', ifSteerable: true })], running(none), none).events)).toEqual([['r2', 'busy']]);
    const behind = decide([chat('r2'), chat('r3', { continues: 'r2', ifSteerable: true })], running(none), none);
    expect(types(behind.events)).toEqual(['input.accepted', 'input.accepted']);
  });

  it('onBusy reject refuses a chat while a turn runs, and accepts it when none does', () => {
    expect(rejections(decide([chat('x', { onBusy: 'reject' })], running()).events)).toEqual([['x', 'busy']]);
    expect(types(decide([chat('x', { onBusy: 'reject' })]).events)).toEqual(['input.accepted']);
  });

  it('onBusy interrupt ends the running turn at its next step, and the chat runs next', () => {
    const { events, head } = decide([chat('queued'), chat('now', { onBusy: 'interrupt' })], running());
    expect(events.at(-1)).toEqual({ type: 'stop.requested', data: { stop: 'now', turn: 't1', mode: 'interrupt' } });
    expect(head.queue.map((q) => q.id)).toEqual(['now', 'queued']);
    const afterReply = evolveTurn(startTurn('t1', { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' }), {
      type: 'model.replied',
      data: { turn: 't1', step: 0, content: 'working', toolCalls: [{ id: 'c1', name: 'wait', arguments: '{}' }] },
    });
    const stored = decideTurnCommit(head, afterReply, [{ type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'ok', isError: false } }]);
    expect(stored.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded', content: 'working' } });
  });

  it('onBusy rollback asks for the turn to stop now, as a rollback', () => {
    expect(decide([chat('now', { onBusy: 'rollback' })], running()).events.at(-1)).toEqual({
      type: 'stop.requested',
      data: { stop: 'now', turn: 't1', mode: 'rollback' },
    });
  });

  it('ifLastInputId refuses an input when another one was accepted last', () => {
    const { head } = decide([chat('a'), chat('b')]);
    expect(rejections(decide([chat('c', { ifLastInputId: 'a' })], head).events)).toEqual([['c', 'precondition_failed']]);
    expect(types(decide([steer('s', { ifLastInputId: 'b' })], head).events)).toEqual(['input.accepted', 'steer.accepted']);
  });

  it('bounds: the fifth follow-up, the fifth waiting steer and text past the characters are refused as queue_full', () => {
    expect(rejections(decide(['1', '2', '3', '4', '5'].map((id) => chat(id))).events)).toEqual([['5', 'queue_full']]);
    expect(rejections(decide(['1', '2', '3', '4', '5'].map((id) => steer(id)), running()).events)).toEqual([['5', 'queue_full']]);
    const long = { ...base, type: 'chat' as const, onBusy: 'enqueue' as const };
    const events = decide([{ ...long, id: 'a', messages: ['x'.repeat(5000)] }, { ...long, id: 'b', messages: ['y'.repeat(3001)] }]).events;
    expect(rejections(events)).toEqual([['b', 'queue_full']]);
    expect(events.find((e) => e.type === 'input.rejected')).toMatchObject({ data: { message: expect.stringContaining('5000 characters waiting') } });
  });

  it('the characters bound counts code points, as the 429 does: an emoji is one character', () => {
    const long = { ...base, type: 'chat' as const, onBusy: 'enqueue' as const };
    const emoji = '\u{1F600}'.repeat(3000);
    expect(emoji.length).toBe(6000);
    expect(rejections(decide([{ ...long, id: 'a', messages: ['x'.repeat(5000)] }, { ...long, id: 'b', messages: [emoji] }]).events)).toEqual([]);
    const events = decide([{ ...long, id: 'a', messages: [emoji] }, { ...long, id: 'b', messages: ['y'.repeat(5001)] }]).events;
    expect(events.find((e) => e.type === 'input.rejected')).toMatchObject({ data: { input: { id: 'b' }, message: expect.stringContaining('3000 characters waiting') } });
  });

  it('retract takes back a pending input by id or the latest of a queue, and refuses what is not pending', () => {
    const { head } = decide([chat('a'), chat('b'), steer('s')], running());
    expect(decide([retract('r1', { id: 'a' })], head).events).toEqual([
      { type: 'input.retracted', data: { input: { id: 'a', kind: 'chat', text: 'a' }, retract: 'r1' } },
    ]);
    expect(decide([retract('r2', { latest: 'chat' })], head).events[0]).toMatchObject({ data: { input: { id: 'b' } } });
    expect(decide([retract('r3', { latest: 'steer' })], head).events[0]).toMatchObject({ data: { input: { id: 's' } } });
    expect(decide([retract('r4', { id: 'p0' })], head).events).toEqual([
      { type: 'retract.refused', data: { retract: 'r4', target: 'p0', code: 'not_found' } },
    ]);
    const after = decide([retract('r1', { id: 'a' })], head).head;
    expect(after.queue.map((q) => q.id)).toEqual(['b']);
  });

  it('promote turns a pending follow-up into a steer of the running turn, and refuses anything else', () => {
    const { head } = decide([chat('f')], running());
    const promoted = decide([promote('pr', 'f')], head);
    expect(decisions(promoted.events)).toEqual([['f', 't1', true]]);
    expect(promoted.head.steers.map((s) => s.id)).toEqual(['f']);
    expect(promoted.head.queue).toEqual([]);
    expect(decide([promote('pr2', 'nope')], head).events).toEqual([{ type: 'promote.refused', data: { promote: 'pr2', target: 'nope', code: 'not_found' } }]);
    const idle = decide([chat('f')]);
    expect(decisions(decide([promote('pr3', 'f')], idle.head).events)).toEqual([['f', null, false]]);
  });

  it('stop with discardPending discards every pending input', () => {
    const { head } = decide([chat('a'), steer('s')], running());
    const { events, head: after } = decide([stop('halt', true)], head);
    expect(types(events)).toEqual(['stop.requested', 'input.discarded', 'input.discarded']);
    expect(after.queue).toEqual([]);
    expect(after.steers).toEqual([]);
  });
});

describe('who may write, decided with the input', () => {
  it('the first accepted input opens the conversation for its subject; a chat or steer of another subject is refused forbidden', () => {
    const opened = decide([chat('a')], initialState());
    expect(opened.events[0]).toEqual({ type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } });
    const bob = { subject: 'bob' };
    const { events } = decide([chat('b', bob), steer('s', bob), chat('c')], opened.head);
    expect(rejections(events)).toEqual([
      ['b', 'forbidden'],
      ['s', 'forbidden'],
    ]);
    expect(types(events)).toEqual(['input.rejected', 'input.rejected', 'input.accepted']);
  });

  it('only the owner grants, on an opened conversation, and never to itself', () => {
    const grant = (id: string, subject: string, grantee: string, access: 'read' | 'write' | null = 'read'): InputRecord => ({ ...base, type: 'grant', id, subject, grantee, access });
    expect(decide([grant('g0', 'alice', 'bob')], initialState()).events).toEqual([{ type: 'grant.refused', data: { grant: 'g0', subject: 'bob', code: 'not_found' } }]);
    const { events, head } = decide([grant('g1', 'alice', 'bob'), grant('g2', 'bob', 'carol'), grant('g3', 'alice', 'alice'), grant('g4', 'alice', 'alice', null)]);
    expect(events.map((e) => (e.type === 'grant.refused' ? [e.data.grant, e.data.code] : [e.type]))).toEqual([['access.granted'], ['g2', 'forbidden'], ['g3', 'owner'], ['g4', 'owner']]);
    expect(head.grants).toEqual({ bob: 'read' });
  });

  it('every kind of decision on an input holds one of its receipt keys, so a redelivered input adds nothing', () => {
    const inputs: InputRecord[] = [chat('c'), steer('s'), chat('busy', { onBusy: 'reject' }), stop('x'), retract('r', { id: 'c' }), retract('r2', { id: 'none' }), promote('p', 'c2'), promote('p2', 'none')];
    let head = running();
    head = decide([chat('c2')], head).head;
    for (const input of inputs) {
      const { events, head: after } = decide([input], head);
      expect(events.some((e) => receiptKeys(input).includes(onceKey(e))), input.id).toBe(true);
      expect(decide([input], after, policy, new Set(events.map(onceKey))).events).toEqual([]);
    }
  });
});

describe('a landed steer is shown to the model', () => {
  const call = { id: 'c1', name: 'wait', arguments: '{}' };
  const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };
  const afterReply = evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: 'working', toolCalls: [call] } });
  const result: DomainEvent = { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'ok', isError: false } };

  it('by a turn then interrupted: it takes the steer at its next step, and ends superseded only at a step with none waiting', () => {
    const { head } = decide([steer('s'), chat('now', { onBusy: 'interrupt' })], running());
    const stored = decideTurnCommit(head, afterReply, [result]);
    expect(types(stored)).toEqual(['tool.ended', 'steer.taken', 'input.delivered']);
    const turn = [...stored].reduce(evolveTurn, evolveTurn(afterReply, { type: 'stop.requested', data: { stop: 'now', turn: 't1', mode: 'interrupt' } }));
    expect(nextAction(turn, { maxSteps: 32 })).toEqual({ type: 'request-model', step: 1 });
    const taken = stored.reduce(evolve, head);
    const next = evolveTurn(turn, { type: 'model.replied', data: { turn: 't1', step: 1, content: 'again', toolCalls: [{ ...call, id: 'c2' }] } });
    const end = decideTurnCommit(taken, next, [{ ...result, data: { ...result.data, step: 1, callId: 'c2' } } as DomainEvent]);
    expect(end.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded', steered: [{ id: 's', text: 's' }] } });
  });

  it('by a turn at its last allowed step: the model is asked once more for the steer instead of the turn failing', () => {
    const { head } = decide([steer('s')], running());
    const stored = decideTurnCommit(head, afterReply, [result]);
    const turn = stored.reduce(evolveTurn, afterReply);
    expect(turn.steps).toBe(1);
    expect(nextAction(turn, { maxSteps: 1 })).toEqual({ type: 'request-model', step: 1 });
    expect(nextAction(afterReply.openCalls.length ? evolveTurn(afterReply, result) : afterReply, { maxSteps: 1 })).toMatchObject({ type: 'end', status: 'failed' });
  });

  it('a turn asked to stop or roll back ends stopped even when its final answer was on its way', () => {
    const { head } = decide([chat('now', { onBusy: 'rollback' })], running());
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    expect(decideTurnCommit(head, startTurn('t1', prompt), final).at(-1)).toMatchObject({ data: { status: 'stopped', outcome: 'rolled back: a newer input replaced it' } });
  });
});

describe("the plan (todos) and a rolled-back turn", () => {
  const prompt = { id: 'p1', text: 'p1', messages: ['p1'], subject: 'alice' };
  const updated = (turn: string, items: string[], next: number, callId: string | null = 'c1'): DomainEvent => ({
    type: 'todos.updated',
    data: { turn, step: 0, callId, items: items.map((text, i) => ({ n: i + 1, text, status: 'pending' as const })), next },
  });
  const ended = (turn: string): DomainEvent => ({ type: 'turn.ended', data: { turn, status: 'completed', outcome: null, content: '', steered: [] } });
  /** t0 wrote ["a"] and ended; t1 runs. */
  const withPlan = () => {
    const { head } = decide([chat('p0'), chat('p1')]);
    const t0 = [...startNextTurn(head, 't0'), updated('t0', ['a'], 2), ended('t0')].reduce(evolve, head);
    return startNextTurn(t0, 't1').reduce(evolve, t0);
  };

  it("a rolled-back turn's end puts the plan back as it was before the turn's first change, keeping its numbers used", () => {
    const changed = [updated('t1', ['a', 'b'], 3, 'c1'), updated('t1', ['a', 'b', 'c'], 4, 'c2')].reduce(evolve, withPlan());
    const { head } = decide([chat('now', { onBusy: 'rollback' })], changed);
    const stored = decideTurnCommit(head, startTurn('t1', prompt), [ended('t1')]);
    expect(types(stored)).toEqual(['todos.updated', 'turn.ended']);
    expect(stored[0]).toEqual(updated('t1', ['a'], 4, null));
    expect(onceKey(stored[0])).toBe('todos-undone:t1');
    const after = stored.reduce(evolve, head);
    expect(after.todos).toEqual({ items: [{ n: 1, text: 'a', status: 'pending' }], next: 4 });
  });

  it('a change stored in the commit that ends the turn rolled back is undone too; a turn that changed nothing, or was stopped, undoes nothing', () => {
    const { head } = decide([chat('now', { onBusy: 'rollback' })], withPlan());
    const withChange = decideTurnCommit(head, startTurn('t1', prompt), [updated('t1', ['a', 'x'], 3), ended('t1')]);
    expect(types(withChange)).toEqual(['todos.updated', 'todos.updated', 'turn.ended']);
    expect(withChange.reduce(evolve, head).todos.items.map((i) => i.text)).toEqual(['a']);
    expect(types(decideTurnCommit(head, startTurn('t1', prompt), [ended('t1')]))).toEqual(['turn.ended']);
    const stopped = decide([stop('s')], [updated('t1', ['a', 'b'], 3)].reduce(evolve, withPlan())).head;
    const kept = decideTurnCommit(stopped, startTurn('t1', prompt), [ended('t1')]);
    expect(types(kept)).toEqual(['turn.ended']);
    expect(kept.reduce(evolve, stopped).todos.items.map((i) => i.text)).toEqual(['a', 'b']);
  });
});

describe('winding down (an interrupt, a graceful stop)', () => {
  const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };
  const reply = (step: number, calls: string[]): DomainEvent => ({
    type: 'model.replied',
    data: { turn: 't1', step, content: `step ${step}`, toolCalls: calls.map((id) => ({ id, name: 'wait', arguments: '{}' })) },
  });
  const result = (step: number, callId: string): DomainEvent => ({ type: 'tool.ended', data: { turn: 't1', step, callId, name: 'wait', result: 'partial', isError: false } });

  it('a graceful stop asks the running turn to wind down; a plain one stops it', () => {
    expect(decide([{ ...stop('s'), graceful: true } as InputRecord], running()).events).toEqual([{ type: 'stop.requested', data: { stop: 's', turn: 't1', mode: 'wind-down' } }]);
    expect(decide([stop('s')], running()).events).toEqual([{ type: 'stop.requested', data: { stop: 's', turn: 't1', mode: 'stop' } }]);
  });

  it('winding down, the model is asked once more after the step, and the turn ends completed, marked woundDown; a steer meanwhile waits as a turn of its own', () => {
    const { head, events } = decide([{ ...stop('s'), graceful: true } as InputRecord, steer('late')], running());
    expect(decisions(events)).toEqual([['late', null, false]]);
    let turn = [reply(0, ['c1']), ...events].reduce(evolveTurn, startTurn('t1', prompt));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'run-tools', step: 0, calls: [expect.objectContaining({ id: 'c1' })] });
    turn = evolveTurn(turn, result(0, 'c1'));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'request-model', step: 1 });
    const final: DomainEvent[] = [reply(1, []), { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'step 1', steered: [] } }];
    expect(decideTurnCommit(head, turn, final).at(-1)).toEqual({ type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'step 1', steered: [], woundDown: true } });
  });

  it('winding down, a reply that calls tools again ends the turn completed with those calls closed, not run', () => {
    const { events } = decide([{ ...stop('s'), graceful: true } as InputRecord], running());
    const turn = [...events, reply(0, ['c1']), result(0, 'c1'), reply(1, ['c2'])].reduce(evolveTurn, startTurn('t1', prompt));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'end', status: 'completed', outcome: null });
    expect(endTurn(turn, 'completed', null)[0]).toMatchObject({ type: 'tool.ended', data: { callId: 'c2', result: 'not run: the turn was asked to wind down', isError: true } });
  });

  it('a later, softer request never undoes a harder one: a graceful stop or an interrupt after a stop still stops; a stop after a graceful stop stops', () => {
    const stopped = decide([stop('s1'), { ...stop('s2'), graceful: true } as InputRecord, chat('now', { onBusy: 'interrupt' })], running()).head;
    expect(stopped.ending).toBe('stop');
    const turn = decide([stop('s1'), { ...stop('s2'), graceful: true } as InputRecord], running()).events.reduce(evolveTurn, startTurn('t1', prompt));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'end', status: 'stopped', outcome: 'stopped on request' });
    expect(decide([{ ...stop('s1'), graceful: true } as InputRecord, stop('s2')], running()).head.ending).toBe('stop');
  });

  it('an interrupted turn ends superseded at its step, marked woundDown', () => {
    const { head } = decide([chat('now', { onBusy: 'interrupt' })], running());
    const turn = evolveTurn(startTurn('t1', prompt), reply(0, ['c1']));
    const stored = decideTurnCommit(head, turn, [result(0, 'c1')]);
    expect(stored.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded', woundDown: true } });
  });
});

describe("a chat's place at acceptance (the 202's position)", () => {
  const aheadOf = (events: DomainEvent[]) => events.flatMap((e) => (e.type === 'input.accepted' && e.data.input.kind === 'chat' ? [[e.data.input.id, e.data.ahead]] : []));

  it('counts the follow-ups waiting and the running turn; a steer that missed its turn waits among them', () => {
    expect(aheadOf(decide([chat('a')]).events)).toEqual([['a', 0]]);
    expect(aheadOf(decide([chat('a'), chat('b'), steer('s'), chat('c')]).events)).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 3],
    ]);
    expect(aheadOf(decide([chat('a'), chat('b')], running()).events)).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('a steer that lands has no place in the queue', () => {
    const accepted = decide([steer('s')], running()).events.find((e) => e.type === 'input.accepted');
    expect(accepted?.data).not.toHaveProperty('ahead');
  });
});

describe('approvals under the conversation lock', () => {
  const approval = (id: string, target: string, decision: 'approve' | 'deny', extra: { arguments?: string; reason?: string; subject?: string } = {}): InputRecord => ({
    ...base,
    type: 'approval',
    id,
    approval: target,
    decision,
    ...extra,
  });
  const checking: Agents = { ...agentsWith(policy), argumentsError: (_agent, _tool, args) => (args.includes('"to"') ? null : 'to is required') };
  /** Turn t1 running, its reply calling `send` (c1, waiting for approval a1, due at `expiresAt`) and `look` (c2, running). */
  const waiting = (expiresAt: string | null = null) =>
    (
      [
        { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [{ id: 'c1', name: 'send', arguments: '{"to":"bob"}' }, { id: 'c2', name: 'look', arguments: '{}' }] } },
        { type: 'approval.requested', data: { turn: 't1', step: 0, approval: 'a1', call: { id: 'c1', name: 'send', arguments: '{"to":"bob"}' }, requestedAt: sentAt, expiresAt } },
      ] as DomainEvent[]
    ).reduce(evolve, running());
  const decideWith = (inputs: InputRecord[], head: ConversationState) => {
    const events = decideInputs(head, inputs, new Set(), checking);
    return { events, head: events.reduce(evolve, head) };
  };

  it('the turn parks once every open call waits for a person: no open work (a rebalance leaves it in the store); a result or a decision unparks it', () => {
    const head = waiting();
    expect(head.awaiting.map((a) => [a.approval, a.callId, a.tool])).toEqual([['a1', 'c1', 'send']]);
    expect(parked(head)).toBe(false); // c2 still runs
    const onlyWaiting = evolve(head, { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c2', name: 'look', result: 'x', isError: false } });
    expect(parked(onlyWaiting)).toBe(true);
    expect(hasOpenWork(onlyWaiting)).toBe(false);
    const approved = decideWith([approval('d1', 'a1', 'approve')], onlyWaiting).head;
    expect(approved.awaiting).toEqual([]);
    expect(parked(approved)).toBe(false);
    expect(hasOpenWork(approved)).toBe(true);
    // A stop asked for: the runner must close the waiting call.
    const stopping = decide([stop('s')], onlyWaiting).head;
    expect(hasOpenWork(stopping)).toBe(true);
  });

  it('a decision is stored once, with its subject and input; any later one is refused not_awaiting', () => {
    const { events, head } = decideWith([approval('d1', 'a1', 'approve', { arguments: '{"to":"carol"}' }), approval('d2', 'a1', 'deny')], waiting());
    expect(events).toEqual([
      { type: 'approval.decided', data: { turn: 't1', step: 0, approval: 'a1', callId: 'c1', tool: 'send', decision: 'approve', reason: null, arguments: '{"to":"carol"}', subject: 'alice', input: 'd1' } },
      { type: 'approval.refused', data: { input: 'd2', approval: 'a1', code: 'not_awaiting', message: 'no call waits for approval a1' } },
    ]);
    expect(head.awaiting).toEqual([]);
    expect(events.map(onceKey)).toEqual(['approval-decision:d1', 'approval-decision:d2']);
    expect(receiptKeys(approval('d1', 'a1', 'approve'))).toEqual(['approval-decision:d1']);
  });

  it('refused: another subject (forbidden), an unknown approval, edited arguments the tool refuses, a turn asked to stop; a denial keeps no arguments', () => {
    const codes = (inputs: InputRecord[], head = waiting()) => decideWith(inputs, head).events.map((e) => (e.type === 'approval.refused' ? e.data.code : e.type));
    expect(codes([{ ...approval('d1', 'a1', 'approve'), subject: 'mallory' }])).toEqual(['forbidden']);
    expect(codes([approval('d1', 'nope', 'approve')])).toEqual(['not_awaiting']);
    expect(codes([approval('d1', 'a1', 'approve', { arguments: '{"cc":"x"}' })])).toEqual(['invalid_arguments']);
    expect(codes([approval('d1', 'a1', 'approve')], decide([stop('s')], waiting()).head)).toEqual(['not_awaiting']);
    const denied = decideWith([approval('d1', 'a1', 'deny', { arguments: '{"cc":"x"}', reason: 'no' })], waiting()).events[0];
    expect(denied).toMatchObject({ type: 'approval.decided', data: { decision: 'deny', reason: 'no', arguments: null } });
  });

  it('a call past its deadline is denied once, with no subject; not before, and not while the turn is asked to end', () => {
    const head = waiting('2026-12-01T00:00:10.000Z');
    expect(head.dueAt).toBe('2026-12-01T00:00:10.000Z');
    expect(decideTimeouts(head, new Date('2026-12-01T00:00:09.999Z'))).toEqual([]);
    const timedOut = decideTimeouts(head, new Date('2026-12-01T00:00:10.000Z'));
    expect(timedOut).toMatchObject([{ type: 'approval.decided', data: { approval: 'a1', decision: 'deny', subject: null, input: null } }]);
    const after = timedOut.reduce(evolve, head);
    expect(after.dueAt).toBeNull();
    expect(decideTimeouts(after, new Date('2026-12-02T00:00:00.000Z'))).toEqual([]);
    expect(decideTimeouts(decide([stop('s')], head).head, new Date('2026-12-02T00:00:00.000Z'))).toEqual([]);
  });

  it('the end of the turn forgets its calls: nothing waits or is due after it', () => {
    const head = waiting('2026-12-01T00:00:10.000Z');
    const ended = evolve(head, { type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: 'x', content: '', steered: [] } });
    expect([ended.awaiting, ended.openCalls, ended.dueAt]).toEqual([[], [], null]);
  });
});

describe('conversation keys the Responses door derives', () => {
  const opening = (subject: string, nonce: string | undefined, key: string): InputRecord => ({
    ...chat('create'),
    subject,
    conversation: key,
    ...(nonce === undefined ? {} : { derivedFrom: nonce }),
  });
  const aliceKey = derivedConversationKey('alice', 'order-1');

  it('are opened only by a chat of the subject and nonce that derive them', () => {
    const opened = decide([opening('alice', 'order-1', aliceKey)], initialState());
    expect(types(opened.events)).toEqual(['conversation.opened', 'input.accepted']);
    expect(opened.head.owner).toBe('alice');
    // Another subject computing alice's key cannot open it: not by a plain chat, nor by claiming her nonce.
    for (const [subject, nonce] of [['bob', undefined], ['bob', 'order-1']] as const) {
      expect(rejections(decide([opening(subject, nonce, aliceKey)], initialState()).events)).toEqual([['create', 'forbidden']]);
    }
    expect(rejections(decide([{ ...chat('s'), type: 'steer', text: 's', conversation: aliceKey, subject: 'bob' } as InputRecord], initialState()).events)).toEqual([['s', 'forbidden']]);
  });

  it('a create meant to open one never joins a conversation another subject opened, even with write granted', () => {
    const bobs = { ...initialState(), owner: 'bob', agent: 'default', grants: { alice: 'write' as const } };
    const refused = decide([opening('alice', 'order-1', aliceKey)], bobs).events;
    expect(refused).toEqual([expect.objectContaining({ type: 'input.rejected', data: expect.objectContaining({ code: 'forbidden', message: expect.stringContaining('opened by another subject') }) })]);
    // Alice's own retry of it is accepted.
    expect(types(decide([opening('alice', 'order-1', aliceKey)], { ...bobs, owner: 'alice', grants: {} }).events)).toEqual(['input.accepted']);
  });

  it("a key is derived from the subject and the nonce: a retry's Idempotency-Key finds it again, another subject's does not", () => {
    expect(derivedConversationKey('alice', 'k1')).toBe(derivedConversationKey('alice', 'k1'));
    expect(derivedConversationKey('alice', 'k1')).not.toBe(derivedConversationKey('bob', 'k1'));
    expect(derivedConversationKey('alice', 'k1')).toMatch(/^responses\/[0-9a-f]{40}$/);
  });

  it('keys outside the prefix are opened by anyone, as before', () => {
    expect(types(decide([opening('bob', undefined, 'trip/1')], initialState()).events)).toEqual(['conversation.opened', 'input.accepted']);
  });
});
