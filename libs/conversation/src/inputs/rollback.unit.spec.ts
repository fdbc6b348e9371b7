import { describe, expect, it } from 'vitest';
import { ROLLBACK_TURNS_MAX, type DomainEvent, type InputRecord } from '@rudder/contracts';
import { startTurn } from '@rudder/agent/turn';
import { onceKey } from '../event-rules';
import { receiptKeys, receiptOf } from '../receipts';
import { base, chat, deciderSpec, IDLE, policy, type Given } from '../testing/decider-spec';

const { given } = deciderSpec();
/** The same, with the agents a conversation is handed to (`billing`, `refunds`) known. */
const { given: givenAgents } = deciderSpec({ defaultAgent: 'default', policyOf: (name) => (['default', 'billing', 'refunds'].includes(name) ? policy : undefined) });

/** A rollback `id` of the last `turns` turns, or of every turn after `toTurn`. */
const rollback = (id: string, asked: { turns: number } | { toTurn: string }, extra: { ifLastTurn?: string; stopRunning?: boolean; subject?: string } = {}): InputRecord => ({
  ...base,
  type: 'rollback',
  id,
  asked,
  ...extra,
});
const ended = (turn: string, status: 'completed' | 'stopped' = 'completed'): DomainEvent => ({ type: 'turn.ended', data: { turn, status, outcome: null, content: '', steered: [] } });
const planned = (turn: string, items: string[], next: number, callId: string | null = 'c1'): DomainEvent => ({
  type: 'todos.updated',
  data: { turn, step: 0, callId, items: items.map((text, i) => ({ n: i + 1, text, status: 'pending' as const })), next },
});
/** `n` turns t1..tn, each answering its chat c1..cn, ended. */
const turns = (n: number, head: Given = given(IDLE)): Given => {
  let at = head;
  for (let i = 1; i <= n; i++) at = at.and(chat(`c${i}`)).andTurnStarts(`t${i}`).andStored(ended(`t${i}`));
  return at;
};
const rolledBack = (id: string, asked: { turns: number } | { toTurn: string }, rolled: string[], stopped: string | null = null): DomainEvent => ({
  type: 'turns.rolledBack',
  data: { rollback: id, asked, turns: rolled, stopped },
});

describe('a rollback under the conversation lock', () => {
  it('rolls back the last n ended turns, oldest first; they leave the turns a later rollback reaches', () => {
    const head = turns(3);
    const decided = head.when(rollback('r1', { turns: 2 })).then([rolledBack('r1', { turns: 2 }, ['t2', 't3'])]);
    expect(decided.state.endedTurns.map((t) => t.turn)).toEqual(['t1']);
    // The next rollback reaches only what is left: t1, then nothing.
    decided.after.when(rollback('r2', { turns: 1 })).then([rolledBack('r2', { turns: 1 }, ['t1'])]);
    decided.after.when(rollback('r3', { turns: 2 })).thenRefused('too_far');
  });

  it('toTurn rolls back every turn after it, and it stays the last; an unknown or rolled-back turn is not found', () => {
    const head = turns(3);
    head.when(rollback('r1', { toTurn: 't1' })).then([rolledBack('r1', { toTurn: 't1' }, ['t2', 't3'])]);
    head.when(rollback('r2', { toTurn: 't3' })).then([rolledBack('r2', { toTurn: 't3' }, [])]);
    head.when(rollback('r3', { toTurn: 'nobody' })).thenRefused('not_found');
    const gone = head.and(rollback('r4', { turns: 1 }));
    gone.when(rollback('r5', { toTurn: 't3' })).thenRefused('not_found');
  });

  it('ifLastTurn: refused unless the last turn that ended (and was not rolled back) is that one, the refusal saying which it is', () => {
    const head = turns(2);
    head.when(rollback('r1', { turns: 1 }, { ifLastTurn: 't2' })).thenTypes('turns.rolledBack');
    const stale = head.when(rollback('r2', { turns: 1 }, { ifLastTurn: 't1' })).thenRefused('precondition_failed');
    expect(stale.events[0]).toMatchObject({ data: { lastTurn: 't2' } });
    // Another turn ended since the client looked: refused.
    turns(1, head).when(rollback('r3', { turns: 1 }, { ifLastTurn: 't2' })).thenRefused('precondition_failed');
    // A rollback since moved the last turn too.
    head.and(rollback('r4', { turns: 1 })).when(rollback('r5', { turns: 1 }, { ifLastTurn: 't2' })).thenRefused('precondition_failed');
  });

  it('while a turn runs (a parked one too) it is refused, naming the turn', () => {
    const running = turns(1).and(chat('c2')).andTurnStarts('t2');
    const busy = running.when(rollback('r1', { turns: 1 })).thenRefused('busy');
    expect(busy.events[0]).toMatchObject({ data: { running: 't2' } });
    const parked = running.andStored(
      { type: 'model.replied', data: { turn: 't2', step: 0, content: '', toolCalls: [{ id: 'k1', name: 'send', arguments: '{}' }] } },
      { type: 'approval.requested', data: { turn: 't2', step: 0, approval: 'appr_1', call: { id: 'k1', name: 'send', arguments: '{}' }, requestedAt: base.sentAt, expiresAt: null } },
    );
    parked.when(rollback('r2', { turns: 1 })).thenRefused('busy');
  });

  it('stopRunning stops the running turn first, as a rollback, and it is the last of the turns rolled back, counted among them', () => {
    const running = turns(2).and(chat('c3')).andTurnStarts('t3');
    const decided = running.when(rollback('r1', { turns: 2 }, { stopRunning: true }));
    decided.then([
      { type: 'stop.requested', data: { stop: 'r1', turn: 't3', mode: 'rollback' } },
      rolledBack('r1', { turns: 2 }, ['t2', 't3'], 't3'),
    ]);
    expect(decided.state.ending).toBe('rollback');
    expect(decided.state.endedTurns.map((t) => t.turn)).toEqual(['t1']);
    // The running turn alone; toTurn the last ended one: the running turn alone too.
    running.when(rollback('r2', { turns: 1 }, { stopRunning: true })).then([
      { type: 'stop.requested', data: { stop: 'r2', turn: 't3', mode: 'rollback' } },
      rolledBack('r2', { turns: 1 }, ['t3'], 't3'),
    ]);
    running.when(rollback('r3', { toTurn: 't2' }, { stopRunning: true })).thenTypes('stop.requested', 'turns.rolledBack');
    // Its end: stopped, not among the turns a later rollback reaches.
    const prompt = { id: 'c3', text: 'c3', messages: ['c3'], subject: 'alice' };
    const end = decided.after.whenCommitting(startTurn('t3', prompt), [ended('t3')]);
    expect(end.events).toMatchObject([{ type: 'turn.ended', data: { turn: 't3', status: 'stopped' } }]);
    expect(end.state.endedTurns.map((t) => t.turn)).toEqual(['t1']);
  });

  it("undoes the plan changes of the turns it rolls back: the items before the first change any of them made, numbers kept used", () => {
    const head = given(IDLE)
      .and(chat('c1'))
      .andTurnStarts('t1')
      .andStored(planned('t1', ['a'], 2), ended('t1'))
      .and(chat('c2'))
      .andTurnStarts('t2')
      .andStored(ended('t2'))
      .and(chat('c3'))
      .andTurnStarts('t3')
      .andStored(planned('t3', ['a', 'b'], 3), planned('t3', ['a', 'b', 'c'], 4, 'c2'), ended('t3'))
      .and(chat('c4'))
      .andTurnStarts('t4')
      .andStored(planned('t4', ['x'], 5), ended('t4'));
    const decided = head.when(rollback('r1', { turns: 3 })).thenTypes('turns.rolledBack', 'todos.updated');
    expect(decided.events[1]).toEqual(planned('t3', ['a'], 5, null));
    expect(onceKey(decided.events[1])).toBe('todos-undone:t3');
    expect(decided.state.todos).toEqual({ items: [{ n: 1, text: 'a', status: 'pending' }], next: 5 });
    // Turns that changed nothing: nothing to undo.
    head.when(rollback('r2', { toTurn: 't3' })).thenTypes('turns.rolledBack', 'todos.updated');
    turns(2).when(rollback('r3', { turns: 2 })).thenTypes('turns.rolledBack');
  });

  it('with stopRunning, a running turn that changed the plan undoes its own with its end, after the plan the ended ones had is put back', () => {
    const head = given(IDLE)
      .and(chat('c1'))
      .andTurnStarts('t1')
      .andStored(planned('t1', ['a'], 2), ended('t1'))
      .and(chat('c2'))
      .andTurnStarts('t2')
      .andStored(planned('t2', ['a', 'b'], 3), ended('t2'))
      .and(chat('c3'))
      .andTurnStarts('t3')
      .andStored(planned('t3', ['a', 'b', 'c'], 4));
    const decided = head.when(rollback('r1', { turns: 2 }, { stopRunning: true })).thenTypes('stop.requested', 'turns.rolledBack', 'todos.updated');
    expect(decided.state.todos.items.map((i) => i.text)).toEqual(['a']);
    const prompt = { id: 'c3', text: 'c3', messages: ['c3'], subject: 'alice' };
    // The plan is already as before t2: the running turn's end undoes nothing more.
    const end = decided.after.whenCommitting(startTurn('t3', prompt), [ended('t3')]).thenTypes('turn.ended');
    expect(end.state.todos.items.map((i) => i.text)).toEqual(['a']);
    // Rolled back alone, the running turn puts back the plan before its own change.
    const alone = head.and(rollback('r2', { turns: 1 }, { stopRunning: true })).whenCommitting(startTurn('t3', prompt), [ended('t3')]).thenTypes('todos.updated', 'turn.ended');
    expect(alone.state.todos.items.map((i) => i.text)).toEqual(['a', 'b']);
  });

  it('hands the conversation back to the agent that answered before the first handoff of the turns it rolls back, once', () => {
    const handed = (turn: string, from: string, to: string, step = 0): DomainEvent => ({ type: 'agent.changed', data: { from, to, turn, step } });
    const head = givenAgents(IDLE)
      .and(chat('c1'))
      .andTurnStarts('t1')
      .andStored(ended('t1'))
      .and(chat('c2'))
      .andTurnStarts('t2')
      .andStored(handed('t2', 'default', 'billing'), ended('t2'))
      .and(chat('c3'))
      .andTurnStarts('t3')
      .andStored(handed('t3', 'billing', 'refunds'), handed('t3', 'refunds', 'billing', 1), handed('t3', 'billing', 'refunds', 2), ended('t3'));
    expect(head.state.agent).toBe('refunds');
    expect(head.state.endedTurns.map((t) => t.turn)).toEqual(['t1', 't2', 't3']);
    const both = head.when(rollback('r1', { turns: 2 })).then([
      rolledBack('r1', { turns: 2 }, ['t2', 't3']),
      { type: 'agent.changed', data: { from: 'refunds', to: 'default', turn: 't2', step: 0, rollback: 'r1' } },
    ]);
    expect(both.state.agent).toBe('default');
    expect(onceKey(both.events[1])).toBe('agent-back:r1');
    // The last turn alone: back to the agent before its first handoff.
    head.when(rollback('r2', { turns: 1 })).then([
      rolledBack('r2', { turns: 1 }, ['t3']),
      { type: 'agent.changed', data: { from: 'refunds', to: 'billing', turn: 't3', step: 0, rollback: 'r2' } },
    ]);
    // The first turn rolled back handed nothing on, a later one did: back to the agent before that one's handoff.
    head.when(rollback('r5', { turns: 3 })).then([
      rolledBack('r5', { turns: 3 }, ['t1', 't2', 't3']),
      { type: 'agent.changed', data: { from: 'refunds', to: 'default', turn: 't1', step: 0, rollback: 'r5' } },
    ]);
    // Turns that handed nothing on, or handed it back to where it was: nothing to hand back.
    turns(2).when(rollback('r3', { turns: 2 })).thenTypes('turns.rolledBack');
    givenAgents(IDLE).and(chat('c1')).andTurnStarts('t1').andStored(handed('t1', 'default', 'billing'), handed('t1', 'billing', 'default', 1), ended('t1')).when(rollback('r4', { turns: 1 })).thenTypes('turns.rolledBack');
  });

  it('with stopRunning, a running turn that handed on is handed back by the rollback, and a handoff it stores after is dropped: the next turn runs the agent before it', () => {
    const handed = (turn: string, from: string, to: string, step = 0): DomainEvent => ({ type: 'agent.changed', data: { from, to, turn, step } });
    const prompt = { id: 'c2', text: 'c2', messages: ['c2'], subject: 'alice' };
    const running = givenAgents(IDLE).and(chat('c1')).andTurnStarts('t1').andStored(ended('t1')).and(chat('c2')).andTurnStarts('t2').andStored(handed('t2', 'default', 'billing'));
    expect(running.state.runningTurn).toBe('t2');
    const decided = running.when(rollback('r1', { turns: 1 }, { stopRunning: true })).thenTypes('stop.requested', 'turns.rolledBack', 'agent.changed');
    expect(decided.state.agent).toBe('default');
    // Its reply handed on again before it saw the stop: that handoff is not stored; its end stores the stop.
    const again = decided.after.whenCommitting(startTurn('t2', prompt), [handed('t2', 'default', 'refunds', 1), ended('t2')]);
    expect(again.events.map((e) => e.type)).toEqual(['turn.ended']);
    expect(again.state.agent).toBe('default');
    // A rollback of ended turns only while nothing handed on: no hand back; the running turn's own handoff alone is handed back.
    running.when(rollback('r2', { turns: 2 }, { stopRunning: true })).then([
      { type: 'stop.requested', data: { stop: 'r2', turn: 't2', mode: 'rollback' } },
      rolledBack('r2', { turns: 2 }, ['t1', 't2'], 't2'),
      { type: 'agent.changed', data: { from: 'billing', to: 'default', turn: 't1', step: 0, rollback: 'r2' } },
    ]);
  });

  it('a summary that covered a turn rolled back is dropped from the status; one before them stays', () => {
    const head = turns(4).andStored({
      type: 'history.compacted',
      data: { turn: 't4', step: 0, summary: 's', through: { turn: 't2', position: 0 }, turns: 2, tokens: 1 },
    });
    expect(head.when(rollback('r1', { turns: 3 })).state.compaction).toBeNull();
    expect(head.when(rollback('r2', { turns: 2 })).state.compaction).toEqual({ through: 't2', turns: 2, tokens: 1 });
  });

  it(`reaches the last ${ROLLBACK_TURNS_MAX} ended turns; a rolled-back turn (a chat's onBusy rollback) is not one of them`, () => {
    const many = turns(ROLLBACK_TURNS_MAX + 2);
    expect(many.state.endedTurns).toHaveLength(ROLLBACK_TURNS_MAX);
    many.when(rollback('r1', { toTurn: 't2' })).thenRefused('not_found');
    many.when(rollback('r2', { toTurn: 't3' })).thenTypes('turns.rolledBack');
    const interrupted = turns(1).and(chat('c2')).andTurnStarts('t2').and(chat('now', { onBusy: 'rollback' })).andStored(ended('t2', 'stopped'));
    expect(interrupted.state.endedTurns.map((t) => t.turn)).toEqual(['t1']);
  });

  it('refuses a subject that may not write', () => {
    turns(1).when(rollback('r1', { turns: 1 }, { subject: 'mallory' })).thenRefused('forbidden');
  });

  it('is decided once: its decision holds its receipt key, the same rollback again adds nothing, and its receipt tells it from another rollback under its id', () => {
    const head = turns(2);
    for (const input of [rollback('r1', { turns: 1 }), rollback('r2', { toTurn: 'nobody' })]) {
      const decided = head.when(input);
      expect(decided.events.some((e) => receiptKeys(input).includes(onceKey(e))), input.id).toBe(true);
      decided.after.when(input).thenNothing();
    }
    const [done] = head.when(rollback('r1', { turns: 1 })).events;
    expect(receiptOf(rollback('r1', { turns: 1 }), done)).toEqual({ answer: { turns: ['t2'], stopped: null } });
    expect(receiptOf(rollback('r1', { turns: 2 }), done)).toEqual({ reused: true });
    expect(receiptOf(rollback('r1', { toTurn: 't1' }), done)).toEqual({ reused: true });
    const [refused] = head.when(rollback('r3', { toTurn: 'nobody' })).events;
    expect(receiptOf(rollback('r3', { toTurn: 'nobody' }), refused)).toMatchObject({ refusal: { code: 'not_found' } });
  });

  it('each refusal says why in its message and names what it is about, in its event and its receipt, and nothing else', () => {
    const refusalOf = (head: Given, input: InputRecord) => {
      const [event] = head.when(input).events;
      const outcome = receiptOf(input, event);
      return { data: event.data, refusal: outcome !== undefined && 'refusal' in outcome ? outcome.refusal : outcome };
    };
    const running = turns(3).and(chat('c4')).andTurnStarts('t4');
    const cases: { head: Given; input: InputRecord; refusal: Record<string, unknown>; says: string[] }[] = [
      { head: turns(2), input: rollback('r1', { turns: 1 }, { ifLastTurn: 't1' }), refusal: { code: 'precondition_failed', lastTurn: 't2' }, says: ['t2', 't1'] },
      { head: given(IDLE), input: rollback('r1', { turns: 1 }, { ifLastTurn: 't1' }), refusal: { code: 'precondition_failed', lastTurn: null }, says: ['none', 't1'] },
      { head: running, input: rollback('r1', { turns: 1 }), refusal: { code: 'busy', running: 't4' }, says: ['t4', 'stopRunning'] },
      // The running turn, stopped first, is one of those a rollback can reach.
      { head: running, input: rollback('r1', { turns: 5 }, { stopRunning: true }), refusal: { code: 'too_far', available: 4 }, says: ['5 turns', '4 can'] },
      { head: turns(2), input: rollback('r1', { turns: 3 }), refusal: { code: 'too_far', available: 2 }, says: ['3 turns', '2 can'] },
      { head: turns(2), input: rollback('r1', { toTurn: 'nobody' }), refusal: { code: 'not_found' }, says: ['nobody', `${ROLLBACK_TURNS_MAX}`] },
    ];
    for (const { head, input, refusal, says } of cases) {
      const seen = refusalOf(head, input);
      expect(seen.refusal, refusal.code as string).toStrictEqual({ ...refusal, message: expect.any(String) });
      const { message } = seen.refusal as { message: string };
      for (const said of says) expect(message, refusal.code as string).toContain(said);
      expect(seen.data).toStrictEqual({ rollback: 'r1', asked: input.type === 'rollback' ? input.asked : null, ...refusal, message });
    }
  });

  it('its receipt answers only the same ask under its id: turns to turns of the same count, toTurn to the same turn', () => {
    const head = turns(2);
    const [toT1] = head.when(rollback('r1', { toTurn: 't1' })).events;
    expect(receiptOf(rollback('r1', { toTurn: 't1' }), toT1)).toEqual({ answer: { turns: ['t2'], stopped: null } });
    expect(receiptOf(rollback('r1', { toTurn: 't2' }), toT1)).toEqual({ reused: true });
    expect(receiptOf(rollback('r1', { turns: 1 }), toT1)).toEqual({ reused: true });
    const [refused] = head.when(rollback('r2', { toTurn: 'nobody' })).events;
    expect(receiptOf(rollback('r2', { toTurn: 'other' }), refused)).toEqual({ reused: true });
    expect(receiptOf(rollback('r2', { turns: 1 }), refused)).toEqual({ reused: true });
  });

  it('nothing is deleted: the turns stay in the log, and only the rollback is added', () => {
    const head = turns(2);
    const decided = head.when(rollback('r1', { turns: 2 }));
    expect(decided.after.events.filter((e) => e.type === 'turn.ended').map((e) => e.data.turn)).toEqual(['t1', 't2']);
    expect(decided.events).toHaveLength(1);
  });
});
