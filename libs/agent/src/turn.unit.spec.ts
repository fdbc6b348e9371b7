import type { DomainEvent, ToolCall } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { emptyTodos } from './todos';
import { acceptedMessages, awaitingApproval, endTurn, evolveTurn, nextAction, reaskMessage, ROLLED_BACK, startTurn, STOPPED, strongerEnding, SUPERSEDED, type TurnState } from './turn';

/**
 * The turn's bookkeeping, event by event: what each event it folds changes, what it leaves, and
 * what the turn does next from it (the loop's and the decider's specs see it through them).
 */
const call = (id: string): ToolCall => ({ id, name: 'search', arguments: '{}' });
const prompt = { id: 'i-1', text: 'hi\n\nthere', messages: ['hi', 'there'], subject: 'alice' };
const fresh = () => startTurn('t1', prompt);
const replied = (step: number, content: string, toolCalls: ToolCall[] = [], usage?: { promptTokens: number; completionTokens: number; totalTokens: number }, turn = 't1'): DomainEvent => ({
  type: 'model.replied',
  data: { turn, step, content, toolCalls, ...(usage ? { usage } : {}) },
});
const toolEnded = (callId: string, turn = 't1'): DomainEvent => ({ type: 'tool.ended', data: { turn, step: 0, callId, name: 'search', result: `result of ${callId}`, isError: false } });
const steerTaken = (id: string, turn = 't1'): DomainEvent => ({ type: 'steer.taken', data: { turn, step: 1, input: { id, text: `steer ${id}` } } });
const stopRequested = (mode: 'stop' | 'rollback' | 'interrupt' | 'wind-down', turn: string | null = 't1'): DomainEvent =>
  ({ type: 'stop.requested', data: { stop: `s-${mode}`, turn, mode } }) as DomainEvent;
const approvalRequested = (callId: string, step: number, turn = 't1'): DomainEvent => ({
  type: 'approval.requested',
  data: { turn, step, approval: `a-${callId}`, call: call(callId), requestedAt: '2025-01-01T00:00:00Z', expiresAt: null },
});
const approvalDecided = (callId: string, step: number, decision: 'approve' | 'deny', turn = 't1'): DomainEvent => ({
  type: 'approval.decided',
  data: { turn, step, approval: `a-${callId}`, callId, tool: 'search', decision, reason: decision === 'deny' ? 'no' : null, arguments: decision === 'approve' ? '{"q":1}' : null, subject: 'bob', input: 'd-1' },
});
const rejected = (step: number, answer: string, reask: number | null): DomainEvent => ({ type: 'answer.rejected', data: { turn: 't1', step, answer, feedback: 'not so', reask } });
const fold = (events: DomainEvent[], turn: TurnState = fresh()) => events.reduce(evolveTurn, turn);
const limits = { maxSteps: 3 };

describe('the turn as its events fold it', () => {
  it('starts with its prompt’s messages, no step, nothing open, answered, asked or handed on', () => {
    expect(fresh()).toEqual({
      id: 't1',
      prompt,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'user', content: 'there' },
      ],
      steps: 0,
      openCalls: [],
      answers: [],
      answered: false,
      steered: [],
      usage: null,
      ending: null,
      windDownAt: null,
      todos: emptyTodos(),
      approvals: {},
      handoff: null,
      rejected: [],
    });
    const todos = { items: [{ n: 1, text: 'a', status: 'pending' as const }], next: 2 };
    expect(startTurn('t2', prompt, todos).todos).toBe(todos);
  });

  it('a reply: its message, the next step, its calls open, its non-blank content an answer, its usage summed, approvals cleared', () => {
    const first = fold([replied(0, 'looking', [call('c1'), call('c2')], { promptTokens: 10, completionTokens: 2, totalTokens: 12 })]);
    expect(first).toMatchObject({ steps: 1, openCalls: [call('c1'), call('c2')], answers: ['looking'], answered: false, usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12 } });
    expect(first.messages.at(-1)).toEqual({
      role: 'assistant',
      content: 'looking',
      tool_calls: ['c1', 'c2'].map((id) => ({ id, type: 'function', function: { name: 'search', arguments: '{}' } })),
    });
    const withApproval = fold([approvalRequested('c1', 0)], first);
    const second = fold([toolEnded('c1'), toolEnded('c2'), replied(1, '  \n', []), replied(2, 'done', [], { promptTokens: 1, completionTokens: 1, totalTokens: 2 })], withApproval);
    expect(second).toMatchObject({ steps: 3, openCalls: [], answers: ['looking', 'done'], answered: true, usage: { promptTokens: 11, completionTokens: 3, totalTokens: 14 }, approvals: {} });
    expect(second.messages.at(-1)).toEqual({ role: 'assistant', content: 'done' });
    expect(fold([replied(0, 'x')]).usage).toBeNull();
  });

  it('a tool result: its message after the call, and that call no longer open', () => {
    const turn = fold([replied(0, '', [call('c1'), call('c2')]), toolEnded('c2')]);
    expect(turn.openCalls).toEqual([call('c1')]);
    expect(turn.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c2', content: 'result of c2' });
    expect(turn.answers).toEqual([]);
  });

  it('a steer taken: its message last, kept among the steered, and the turn no longer answered', () => {
    const turn = fold([replied(0, 'done'), steerTaken('s-1')]);
    expect(turn).toMatchObject({ answered: false, steered: [{ id: 's-1', text: 'steer s-1' }] });
    expect(turn.messages.at(-1)).toEqual({ role: 'user', content: 'steer s-1' });
    expect(fold([steerTaken('s-2')], turn).steered.map((s) => s.id)).toEqual(['s-1', 's-2']);
  });

  it('an ending asked for: the harder one is kept, and wind-down remembers the step it was asked at, once', () => {
    const winding = fold([replied(0, '', [call('c1')]), stopRequested('wind-down')]);
    expect([winding.ending, winding.windDownAt]).toEqual(['wind-down', 1]);
    const later = fold([toolEnded('c1'), replied(1, '', [call('c2')]), stopRequested('wind-down')], winding);
    expect(later.windDownAt).toBe(1);
    expect(fold([stopRequested('stop'), stopRequested('wind-down')])).toMatchObject({ ending: 'stop', windDownAt: null });
    expect(fold([stopRequested('interrupt')]).windDownAt).toBeNull();
    expect(strongerEnding(null, 'wind-down')).toBe('wind-down');
    expect(strongerEnding('wind-down', 'interrupt')).toBe('interrupt');
    expect(strongerEnding('interrupt', 'wind-down')).toBe('interrupt');
    expect(strongerEnding('stop', 'interrupt')).toBe('stop');
    expect(strongerEnding('rollback', 'stop')).toBe('rollback');
    expect(strongerEnding('stop', 'rollback')).toBe('rollback');
    expect(strongerEnding('stop', 'stop')).toBe('stop');
  });

  it('the plan as stored, whichever turn stored it', () => {
    const items = [{ n: 4, text: 'a', status: 'done' as const }];
    expect(fold([{ type: 'todos.updated', data: { turn: 'other', step: 0, callId: null, items, next: 5 } }]).todos).toEqual({ items, next: 5 });
  });

  it('approvals of the last reply’s calls: requested, then approved (with edited arguments) or denied', () => {
    const turn = fold([replied(0, '', [call('c1'), call('c2')]), approvalRequested('c1', 0), approvalRequested('c2', 0)]);
    expect(turn.approvals.c1).toEqual({ approval: 'a-c1', status: 'awaiting', arguments: null, reason: null, subject: null });
    expect(awaitingApproval(turn, 'c1')).toBe(true);
    expect(awaitingApproval(turn, 'c3')).toBe(false);
    const decided = fold([approvalDecided('c1', 0, 'approve'), approvalDecided('c2', 0, 'deny')], turn);
    expect(decided.approvals).toEqual({
      c1: { approval: 'a-c1', status: 'approved', arguments: '{"q":1}', reason: null, subject: 'bob' },
      c2: { approval: 'a-c2', status: 'denied', arguments: null, reason: 'no', subject: 'bob' },
    });
    expect(awaitingApproval(decided, 'c1')).toBe(false);
    // Of an earlier step, or of another turn: nothing.
    expect(fold([approvalRequested('c1', 1), approvalDecided('c1', 1, 'deny')], fold([replied(0, '', [call('c1')])])).approvals).toEqual({});
    expect(fold([approvalDecided('c1', 0, 'deny', 'other')], turn).approvals.c1.status).toBe('awaiting');
  });

  it('a rejected answer: in its messages with the re-ask quoting the prompt, no answer, the next step; later turns see neither', () => {
    const turn = fold([replied(0, '', [call('c1')]), toolEnded('c1'), rejected(1, 'bad', 1), steerTaken('s-1'), replied(2, 'good')]);
    expect(turn.messages.slice(-4)).toEqual([
      { role: 'assistant', content: 'bad' },
      { role: 'user', content: reaskMessage('hi\n\nthere', 'not so') },
      { role: 'user', content: 'steer s-1' },
      { role: 'assistant', content: 'good' },
    ]);
    expect(turn).toMatchObject({ steps: 3, answers: ['good'], answered: true, rejected: [4] });
    expect(acceptedMessages(turn).map((m) => m.content)).toEqual(['hi', 'there', '', 'result of c1', 'steer s-1', 'good']);
    // Blocked: the block's message is the answer, in the rejected one's place.
    const blocked = fold([rejected(0, 'bad', null)]);
    expect(blocked).toMatchObject({ steps: 1, answers: ['not so'], rejected: [] });
    expect(acceptedMessages(blocked)).toEqual([...fresh().messages, { role: 'assistant', content: 'not so' }]);
    // Without its answer (as the SSE stream carries the event): an empty answer in its place.
    const unstored: DomainEvent = { type: 'answer.rejected', data: { turn: 't1', step: 0, feedback: 'not so', reask: 1 } };
    expect(fold([unstored]).messages.slice(-2)).toEqual([
      { role: 'assistant', content: '' },
      { role: 'user', content: reaskMessage('hi\n\nthere', 'not so') },
    ]);
  });

  it('a handoff: the agents it is from and to, at its step', () => {
    const changed: DomainEvent = { type: 'agent.changed', data: { turn: 't1', from: 'triage', to: 'billing', step: 0 } };
    expect(fold([replied(0, '', [call('c1')]), changed]).handoff).toEqual({ from: 'triage', to: 'billing', step: 0 });
  });

  it('leaves the turn as it is for another turn’s events and for the types it does not fold', () => {
    const turn = fold([replied(0, '', [call('c1')])]);
    const others: DomainEvent[] = [
      replied(1, 'x', [], undefined, 'other'),
      toolEnded('c1', 'other'),
      steerTaken('s-1', 'other'),
      stopRequested('stop', 'other'),
      stopRequested('stop', null),
      approvalRequested('c1', 0, 'other'),
      { type: 'answer.rejected', data: { turn: 'other', step: 1, answer: 'bad', feedback: 'not so', reask: 1 } },
      { type: 'agent.changed', data: { turn: 'other', from: 'triage', to: 'billing', step: 1 } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: '', steered: [] } },
    ];
    for (const event of others) expect(evolveTurn(turn, event), event.type).toBe(turn);
  });
});

describe('what the turn does next', () => {
  it('ends stopped on a stop or a rollback, whatever else is stored', () => {
    expect(nextAction(fold([replied(0, '', [call('c1')]), stopRequested('stop')]), limits)).toEqual({ type: 'end', status: 'stopped', outcome: STOPPED });
    expect(nextAction(fold([replied(0, 'done'), stopRequested('rollback')]), limits)).toEqual({ type: 'end', status: 'stopped', outcome: ROLLED_BACK });
  });

  it('asks the model first, ends completed once answered', () => {
    expect(nextAction(fresh(), limits)).toEqual({ type: 'request-model', step: 0 });
    expect(nextAction(fold([replied(0, 'done')]), limits)).toEqual({ type: 'end', status: 'completed', outcome: null });
  });

  it('runs the open calls of the last reply at its step, or parks while every one waits for a person', () => {
    const open = fold([replied(0, '', [call('c1'), call('c2')])]);
    expect(nextAction(open, limits)).toEqual({ type: 'run-tools', step: 0, calls: [call('c1'), call('c2')] });
    const one = fold([approvalRequested('c1', 0)], open);
    expect(nextAction(one, limits)).toEqual({ type: 'run-tools', step: 0, calls: [call('c1'), call('c2')] });
    const both = fold([approvalRequested('c2', 0)], one);
    expect(nextAction(both, limits)).toEqual({ type: 'park' });
    expect(nextAction(fold([stopRequested('interrupt')], both), limits)).toEqual({ type: 'run-tools', step: 0, calls: [call('c1'), call('c2')] });
    expect(nextAction(fold([toolEnded('c1'), toolEnded('c2')], open), limits)).toEqual({ type: 'request-model', step: 1 });
  });

  it('winding down: runs the calls of the reply it was asked at, asks once more, and ends with that reply’s calls not run', () => {
    const asked = fold([replied(0, '', [call('c1')]), stopRequested('wind-down')]);
    expect(nextAction(asked, limits)).toEqual({ type: 'run-tools', step: 0, calls: [call('c1')] });
    const onceMore = fold([toolEnded('c1'), replied(1, '', [call('c2')])], asked);
    expect(nextAction(onceMore, limits)).toEqual({ type: 'run-tools', step: 1, calls: [call('c2')] });
    const again = fold([toolEnded('c2'), replied(2, '', [call('c3')])], onceMore);
    expect(nextAction(again, { maxSteps: 10 })).toEqual({ type: 'end', status: 'completed', outcome: null });
  });

  it('winding down: a steer taken with the reply asked once more is answered, not ended on', () => {
    const asked = fold([replied(0, '', [call('c1')]), stopRequested('wind-down'), toolEnded('c1'), replied(1, '', [call('c2')]), toolEnded('c2')]);
    // The reply asked once more answered; a steer waiting at it was taken in place of the end: the model answers it.
    const steered = fold([replied(2, 'done'), steerTaken('s-1')], asked);
    expect(nextAction(steered, { maxSteps: 10 })).toEqual({ type: 'request-model', step: 3 });
  });

  it('winding down, then interrupted while the model answered: the reply’s calls run, and the interrupt ends the turn at their step', () => {
    const asked = fold([replied(0, '', [call('c1')]), stopRequested('wind-down'), toolEnded('c1'), replied(1, '', [call('c2')]), toolEnded('c2')]);
    const interrupted = fold([stopRequested('interrupt'), replied(2, '', [call('c3')])], asked);
    expect(interrupted).toMatchObject({ ending: 'interrupt', windDownAt: 1 });
    expect(nextAction(interrupted, { maxSteps: 10 })).toEqual({ type: 'run-tools', step: 2, calls: [call('c3')] });
    expect(nextAction(fold([toolEnded('c3')], interrupted), { maxSteps: 10 })).toEqual({ type: 'end', status: 'superseded', outcome: SUPERSEDED });
  });

  it('answers a step that took steers, even interrupted or past its limit; otherwise an interrupt ends it superseded at a step', () => {
    const steered = fold([replied(0, 'done'), steerTaken('s-1'), stopRequested('interrupt')]);
    expect(nextAction(steered, { maxSteps: 1 })).toEqual({ type: 'request-model', step: 1 });
    const interrupted = fold([replied(0, '', [call('c1')]), toolEnded('c1'), stopRequested('interrupt')]);
    expect(nextAction(interrupted, limits)).toEqual({ type: 'end', status: 'superseded', outcome: SUPERSEDED });
    expect(nextAction(fold([stopRequested('interrupt')]), limits)).toEqual({ type: 'request-model', step: 0 });
  });

  it('asks again after a rejected answer within its limit and not when interrupted; a steer taken after it is answered all the same', () => {
    expect(nextAction(fold([rejected(0, 'bad', 1)]), limits)).toEqual({ type: 'request-model', step: 1 });
    expect(nextAction(fold([rejected(0, 'bad', 1)]), { maxSteps: 1 })).toMatchObject({ type: 'end', status: 'failed' });
    expect(nextAction(fold([rejected(0, 'bad', 1), stopRequested('interrupt')]), limits)).toEqual({ type: 'end', status: 'superseded', outcome: SUPERSEDED });
    expect(nextAction(fold([rejected(0, 'bad', 1), steerTaken('s-1'), stopRequested('interrupt')]), { maxSteps: 1 })).toEqual({ type: 'request-model', step: 1 });
  });

  it('fails at its step limit, not before', () => {
    const steps = (n: number) => fold(Array.from({ length: n }, (_, i) => [replied(i, '', [call(`c${i}`)]), toolEnded(`c${i}`)]).flat());
    expect(nextAction(steps(2), limits)).toEqual({ type: 'request-model', step: 2 });
    expect(nextAction(steps(3), limits)).toEqual({ type: 'end', status: 'failed', outcome: 'the turn reached its limit of 3 model replies' });
    // A limit of none: the prompt (a user's message, last) is not a step that took steers, so the model is never asked.
    expect(nextAction(fresh(), { maxSteps: 0 })).toEqual({ type: 'end', status: 'failed', outcome: 'the turn reached its limit of 0 model replies' });
  });
});

describe('the events that end a turn', () => {
  it('a result for each call still open, saying why it was not run, then turn.ended with the answers, the steers and the usage', () => {
    const usage = { promptTokens: 3, completionTokens: 2, totalTokens: 5 };
    const turn = fold([replied(0, 'first', [call('c0')], usage), toolEnded('c0'), steerTaken('s-1'), replied(1, 'second', [call('c1'), call('c2')]), approvalRequested('c2', 1)]);
    expect(endTurn(turn, 'stopped', STOPPED)).toEqual([
      { type: 'tool.ended', data: { turn: 't1', step: 1, callId: 'c1', name: 'search', result: 'not run to the end: the turn was stopped', isError: true } },
      { type: 'tool.ended', data: { turn: 't1', step: 1, callId: 'c2', name: 'search', result: 'not run: the turn was stopped while the call waited for approval', isError: true } },
      { type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: STOPPED, content: 'first\n\nsecond', steered: [{ id: 's-1', text: 'steer s-1' }], usage } },
    ]);
    const winding = fold([replied(0, '', [call('c1')]), stopRequested('wind-down')]);
    expect(endTurn(winding, 'completed', null)[0].data).toMatchObject({ result: 'not run: the turn was asked to wind down' });
    expect(endTurn(fresh(), 'failed', 'why')).toEqual([{ type: 'turn.ended', data: { turn: 't1', status: 'failed', outcome: 'why', content: '', steered: [] } }]);
  });
});
