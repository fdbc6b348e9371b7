import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { endTurn, evolveTurn, nextAction, startTurn } from '@rudder/agent/turn';
import { onceKey } from './event-rules';
import { receiptKeys } from './receipts';
import { STOPPED } from '@rudder/agent/turn';
import type { InputRecord } from '@rudder/contracts';
import { decideInputs, type Agents, type GuardOutcome } from './decide';
import { evolve } from './event-rules';
import { initialState } from './state';
import { agentsWith, chat, decisions, deciderSpec, IDLE, policy, promote, retract, RUNNING, sentAt, steer, stop, types } from './testing/decider-spec';

const { given } = deciderSpec();

describe('deciding a batch of inputs under the conversation lock', () => {
  it('the log the specs start from is the one the decider makes: turn t1 running, started from chat p0', () => {
    expect(given(IDLE).and(chat('p0')).andTurnStarts('t1').events).toEqual(RUNNING);
  });

  it('an input handled before, or twice in one batch, adds nothing', () => {
    given(RUNNING).and(chat('x')).when(chat('x'), steer('s'), steer('s')).thenTypes('input.accepted', 'steer.accepted');
  });

  it('every kind of decision on an input holds one of its receipt keys, so a redelivered input adds nothing', () => {
    const inputs = [chat('c'), steer('s'), chat('busy', { onBusy: 'reject' }), stop('x'), retract('r', { id: 'c' }), retract('r2', { id: 'none' }), promote('p', 'c2'), promote('p2', 'none')];
    const head = given(RUNNING).and(chat('c2'));
    for (const input of inputs) {
      const decided = head.when(input);
      expect(decided.events.some((e) => receiptKeys(input).includes(onceKey(e))), input.id).toBe(true);
      decided.after.when(input).thenNothing();
    }
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
  const waiting = given(RUNNING).and(steer('s1'), steer('s2'));

  it('the next turn answers the first input waiting, and says it was delivered; none while a turn runs', () => {
    const next = given(IDLE).and(chat('a'), chat('b')).whenTurnStarts('t1').thenTypes('turn.started', 'input.delivered');
    expect(next.events[0]).toMatchObject({ data: { prompt: { id: 'a' } } });
    given(RUNNING).whenTurnStarts('t2').thenNothing();
    given(RUNNING).and(chat('w')).whenTurnStarts('t2').thenNothing();
  });

  it('not while a call of the reply is still open', () => {
    waiting.whenCommitting(afterReply, [result('c1')]).then([result('c1')]);
  });

  it('with the last result of the reply, after it, in the order they were sent', () => {
    const stored = waiting
      .whenCommitting(evolveTurn(afterReply, result('c1')), [result('c2')])
      .thenTypes('tool.ended', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered');
    expect(stored.events[1]).toEqual({ type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } });
    expect(stored.events[2]).toEqual({ type: 'input.delivered', data: { input: { id: 's1', kind: 'steer' }, turn: 't1' } });
  });

  it('not by a commit of a turn that is not the running one: it is stored as it is', () => {
    const stale = startTurn('t0', prompt);
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't0', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't0', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    waiting.whenCommitting(stale, final).then(final);
  });

  it('with a compaction at a step past the turn’s first reply (they came during its summary request): after it, for the step’s request; not before the first reply, nor while a call is open', () => {
    const compacted = (step: number): DomainEvent => ({
      type: 'history.compacted',
      data: { turn: 't1', step, summary: 'before', through: { turn: 't0', position: 4 }, turns: 1, tokens: 1 },
    });
    const atStep = [result('c1'), result('c2')].reduce(evolveTurn, afterReply);
    const stored = waiting.whenCommitting(atStep, [compacted(1)]).thenTypes('history.compacted', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered');
    expect(stored.events[1]).toEqual({ type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } });
    waiting.whenCommitting(startTurn('t1', prompt), [compacted(0)]).then([compacted(0)]);
    waiting.whenCommitting(evolveTurn(afterReply, result('c1')), [compacted(1)]).then([compacted(1)]);
  });

  it('with the final answer, instead of ending the turn: it takes one more step', () => {
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    waiting.whenCommitting(startTurn('t1', prompt), final).thenTypes('model.replied', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered');
  });

  it('with an answer the output guard rejected to ask again: after it, for the re-ask; not with one it blocked (the turn ends refused)', () => {
    const rejected = (reask: number | null): DomainEvent => ({ type: 'answer.rejected', data: { turn: 't1', step: 0, answer: 'no', feedback: 'why', reask } });
    const stored = waiting.whenCommitting(startTurn('t1', prompt), [rejected(1)]).thenTypes('answer.rejected', 'steer.taken', 'input.delivered', 'steer.taken', 'input.delivered');
    expect(stored.events[1]).toEqual({ type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } });
    const refused: DomainEvent[] = [rejected(null), { type: 'turn.ended', data: { turn: 't1', status: 'refused', outcome: 'why', content: 'why', steered: [] } }];
    waiting.whenCommitting(startTurn('t1', prompt), refused).then(refused);
  });

  it('at a step whatever else the commit holds: the plan tool’s result with its plan change, a compaction or a re-ask beside another event', () => {
    const planned: DomainEvent = { type: 'todos.updated', data: { turn: 't1', step: 0, callId: 'c2', items: [{ n: 1, text: 'a', status: 'pending' }], next: 2 } };
    const taken = ['steer.taken', 'input.delivered', 'steer.taken', 'input.delivered'] as const;
    waiting.whenCommitting(evolveTurn(afterReply, result('c1')), [result('c2'), planned]).thenTypes('tool.ended', 'todos.updated', ...taken);
    const atStep = [result('c1'), result('c2')].reduce(evolveTurn, afterReply);
    const compacted: DomainEvent = { type: 'history.compacted', data: { turn: 't1', step: 1, summary: 'before', through: { turn: 't0', position: 4 }, turns: 1, tokens: 1 } };
    waiting.whenCommitting(atStep, [compacted, planned]).thenTypes('history.compacted', 'todos.updated', ...taken);
    const reasked: DomainEvent = { type: 'answer.rejected', data: { turn: 't1', step: 0, answer: 'no', feedback: 'why', reask: 1 } };
    waiting.whenCommitting(startTurn('t1', prompt), [reasked, planned]).thenTypes('answer.rejected', 'todos.updated', ...taken);
  });

  it('not when the turn ends stopped or failed: what it did not take waits as turns of their own, in order', () => {
    const stopped: DomainEvent[] = [{ type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: null, content: '', steered: [] } }];
    waiting.whenCommitting(startTurn('t1', prompt), stopped).then(stopped);
    expect(waiting.and(chat('later')).andStored(...stopped).state.queue.map((q) => q.id)).toEqual(['s1', 's2', 'later']);
  });

  it('a turn nobody steered stores exactly what it asked to', () => {
    given(RUNNING).whenCommitting(evolveTurn(afterReply, result('c1')), [result('c2')]).then([result('c2')]);
  });
});

describe('a turn asked to wind down', () => {
  it('says so on its end only, however it ends', () => {
    const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    const ended = given(RUNNING).and(chat('now', { onBusy: 'interrupt' })).whenCommitting(startTurn('t1', prompt), final);
    expect(ended.events).toEqual([final[0], { ...final[1], data: { ...final[1].data, woundDown: true } }]);
    given(RUNNING).whenCommitting(startTurn('t1', prompt), final).then(final);
  });
});

describe('a batch whose guard failed on an input', () => {
  const agents: Agents = agentsWith(policy);
  const failing = (id: string) => (input: InputRecord) => (input.id === id ? { failed: 'timed out', attempt: 'try' } : undefined);
  const decide = (inputs: InputRecord[], guard: (input: InputRecord) => GuardOutcome | undefined) =>
    decideInputs(IDLE.reduce(evolve, initialState()), inputs, new Set(IDLE.map(onceKey)), agents, new Date(sentAt), guard);

  it('decides no later record of its id in the batch, whatever its kind; the other ids are decided', () => {
    expect(types(decide([chat('x'), stop('x'), chat('y')], failing('x')))).toEqual(['guard.failed', 'input.accepted']);
  });

  it('a control sharing an id with a message that was decided is decided too (its own receipt keys)', () => {
    const decided = types(decide([chat('x'), stop('x')], () => undefined));
    expect(decided).toHaveLength(2);
    expect(decided[1]).toMatch(/^stop\./);
  });
});

describe('a landed steer is shown to the model', () => {
  const call = { id: 'c1', name: 'wait', arguments: '{}' };
  const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };
  const afterReply = evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: 'working', toolCalls: [call] } });
  const result: DomainEvent = { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'ok', isError: false } };

  it('by a turn then interrupted: it takes the steer at its next step, and ends superseded only at a step with none waiting', () => {
    const stored = given(RUNNING).and(steer('s'), chat('now', { onBusy: 'interrupt' })).whenCommitting(afterReply, [result]).thenTypes('tool.ended', 'steer.taken', 'input.delivered');
    const turn = [...stored.events].reduce(evolveTurn, evolveTurn(afterReply, { type: 'stop.requested', data: { stop: 'now', turn: 't1', mode: 'interrupt' } }));
    expect(nextAction(turn, { maxSteps: 32 })).toEqual({ type: 'request-model', step: 1 });
    const next = evolveTurn(turn, { type: 'model.replied', data: { turn: 't1', step: 1, content: 'again', toolCalls: [{ ...call, id: 'c2' }] } });
    const end = stored.after.whenCommitting(next, [{ ...result, data: { ...result.data, step: 1, callId: 'c2' } } as DomainEvent]);
    expect(end.events.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded', steered: [{ id: 's', text: 's' }] } });
  });

  it('by a turn at its last allowed step: the model is asked once more for the steer instead of the turn failing', () => {
    const stored = given(RUNNING).and(steer('s')).whenCommitting(afterReply, [result]);
    const turn = stored.events.reduce(evolveTurn, afterReply);
    expect(turn.steps).toBe(1);
    expect(nextAction(turn, { maxSteps: 1 })).toEqual({ type: 'request-model', step: 1 });
    expect(nextAction(afterReply.openCalls.length ? evolveTurn(afterReply, result) : afterReply, { maxSteps: 1 })).toMatchObject({ type: 'end', status: 'failed' });
  });

  it('a turn asked to stop or roll back ends stopped even when its final answer was on its way', () => {
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    const ended = given(RUNNING).and(chat('now', { onBusy: 'rollback' })).whenCommitting(startTurn('t1', prompt), final);
    expect(ended.events.at(-1)).toMatchObject({ data: { status: 'stopped', outcome: 'rolled back: a newer input replaced it' } });
    const stopped = given(RUNNING).and(stop('x')).whenCommitting(startTurn('t1', prompt), final);
    expect(stopped.events).toEqual([final[0], { ...final[1], data: { ...final[1].data, status: 'stopped', outcome: STOPPED } }]);
  });
});

describe('the plan (todos) and a rolled-back turn', () => {
  const prompt = { id: 'p1', text: 'p1', messages: ['p1'], subject: 'alice' };
  const updated = (turn: string, items: string[], next: number, callId: string | null = 'c1'): DomainEvent => ({
    type: 'todos.updated',
    data: { turn, step: 0, callId, items: items.map((text, i) => ({ n: i + 1, text, status: 'pending' as const })), next },
  });
  const ended = (turn: string): DomainEvent => ({ type: 'turn.ended', data: { turn, status: 'completed', outcome: null, content: '', steered: [] } });
  /** t0 wrote ["a"] and ended; t1 runs. */
  const withPlan = () => given(IDLE).and(chat('p0'), chat('p1')).andTurnStarts('t0').andStored(updated('t0', ['a'], 2), ended('t0')).andTurnStarts('t1');

  it("a rolled-back turn's end puts the plan back as it was before the turn's first change, keeping its numbers used", () => {
    const changed = withPlan().andStored(updated('t1', ['a', 'b'], 3, 'c1'), updated('t1', ['a', 'b', 'c'], 4, 'c2'));
    const stored = changed.and(chat('now', { onBusy: 'rollback' })).whenCommitting(startTurn('t1', prompt), [ended('t1')]).thenTypes('todos.updated', 'turn.ended');
    expect(stored.events[0]).toEqual(updated('t1', ['a'], 4, null));
    expect(onceKey(stored.events[0])).toBe('todos-undone:t1');
    expect(stored.state.todos).toEqual({ items: [{ n: 1, text: 'a', status: 'pending' }], next: 4 });
  });

  it('a change stored in the commit that ends the turn rolled back is undone too; a turn that changed nothing, or was stopped, undoes nothing', () => {
    const head = withPlan().and(chat('now', { onBusy: 'rollback' }));
    const withChange = head.whenCommitting(startTurn('t1', prompt), [updated('t1', ['a', 'x'], 3), ended('t1')]).thenTypes('todos.updated', 'todos.updated', 'turn.ended');
    expect(withChange.state.todos.items.map((i) => i.text)).toEqual(['a']);
    head.whenCommitting(startTurn('t1', prompt), [ended('t1')]).thenTypes('turn.ended');
    const kept = withPlan().andStored(updated('t1', ['a', 'b'], 3)).and(stop('s')).whenCommitting(startTurn('t1', prompt), [ended('t1')]).thenTypes('turn.ended');
    expect(kept.state.todos.items.map((i) => i.text)).toEqual(['a', 'b']);
  });
});

describe('winding down (an interrupt, a graceful stop)', () => {
  const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };
  const reply = (step: number, calls: string[]): DomainEvent => ({
    type: 'model.replied',
    data: { turn: 't1', step, content: `step ${step}`, toolCalls: calls.map((id) => ({ id, name: 'wait', arguments: '{}' })) },
  });
  const result = (step: number, callId: string): DomainEvent => ({ type: 'tool.ended', data: { turn: 't1', step, callId, name: 'wait', result: 'partial', isError: false } });

  it('winding down, the model is asked once more after the step, and the turn ends completed, marked woundDown; a steer meanwhile waits as a turn of its own', () => {
    const decided = given(RUNNING).when(stop('s', { graceful: true }), steer('late'));
    expect(decisions(decided.events)).toEqual([['late', null, false]]);
    let turn = [reply(0, ['c1']), ...decided.events].reduce(evolveTurn, startTurn('t1', prompt));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'run-tools', step: 0, calls: [expect.objectContaining({ id: 'c1' })] });
    turn = evolveTurn(turn, result(0, 'c1'));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'request-model', step: 1 });
    const final: DomainEvent[] = [reply(1, []), { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'step 1', steered: [] } }];
    expect(decided.after.whenCommitting(turn, final).events.at(-1)).toEqual({
      type: 'turn.ended',
      data: { turn: 't1', status: 'completed', outcome: null, content: 'step 1', steered: [], woundDown: true },
    });
  });

  it('winding down, a reply that calls tools again ends the turn completed with those calls closed, not run', () => {
    const { events } = given(RUNNING).when(stop('s', { graceful: true }));
    const turn = [...events, reply(0, ['c1']), result(0, 'c1'), reply(1, ['c2'])].reduce(evolveTurn, startTurn('t1', prompt));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'end', status: 'completed', outcome: null });
    expect(endTurn(turn, 'completed', null)[0]).toMatchObject({ type: 'tool.ended', data: { callId: 'c2', result: 'not run: the turn was asked to wind down', isError: true } });
  });

  it('an interrupted turn ends superseded at its step, marked woundDown', () => {
    const turn = evolveTurn(startTurn('t1', prompt), reply(0, ['c1']));
    const stored = given(RUNNING).and(chat('now', { onBusy: 'interrupt' })).whenCommitting(turn, [result(0, 'c1')]);
    expect(stored.events.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded', woundDown: true } });
  });
});
