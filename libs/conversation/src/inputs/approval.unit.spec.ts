import { describe, expect, it } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import type { Agents } from '../decide';
import { onceKey } from '../event-rules';
import { receiptKeys, receiptOf } from '../receipts';
import { hasOpenWork, parked } from '../state';
import { agentsWith, base, deciderSpec, policy, RUNNING, sentAt, stop, type Given } from '../testing/decider-spec';

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
  const { given } = deciderSpec(checking);
  /** Turn t1 running, its reply calling `send` (c1, waiting for approval a1, due at `expiresAt`) and `look` (c2, running). */
  const waiting = (expiresAt: string | null = null) =>
    given([
      ...RUNNING,
      { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [{ id: 'c1', name: 'send', arguments: '{"to":"bob"}' }, { id: 'c2', name: 'look', arguments: '{}' }] } },
      { type: 'approval.requested', data: { turn: 't1', step: 0, approval: 'a1', call: { id: 'c1', name: 'send', arguments: '{"to":"bob"}' }, requestedAt: sentAt, expiresAt } },
    ]);

  it('the turn parks once every open call waits for a person: no open work (a rebalance leaves it in the store); a result or a decision unparks it', () => {
    const head = waiting();
    expect(head.state.awaiting.map((a) => [a.approval, a.callId, a.tool])).toEqual([['a1', 'c1', 'send']]);
    expect(parked(head.state)).toBe(false); // c2 still runs
    const onlyWaiting = head.andStored({ type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c2', name: 'look', result: 'x', isError: false } });
    expect(parked(onlyWaiting.state)).toBe(true);
    expect(hasOpenWork(onlyWaiting.state)).toBe(false);
    const approved = onlyWaiting.when(approval('d1', 'a1', 'approve')).state;
    expect(approved.awaiting).toEqual([]);
    expect(parked(approved)).toBe(false);
    expect(hasOpenWork(approved)).toBe(true);
    // A stop asked for: the runner must close the waiting call.
    expect(hasOpenWork(onlyWaiting.when(stop('s')).state)).toBe(true);
  });

  it('a decision is stored once, with its subject and input; any later one is refused not_awaiting', () => {
    const decided = waiting()
      .when(approval('d1', 'a1', 'approve', { arguments: '{"to":"carol"}' }), approval('d2', 'a1', 'deny'))
      .then([
        { type: 'approval.decided', data: { turn: 't1', step: 0, approval: 'a1', callId: 'c1', tool: 'send', decision: 'approve', reason: null, arguments: '{"to":"carol"}', subject: 'alice', input: 'd1' } },
        { type: 'approval.refused', data: { input: 'd2', approval: 'a1', code: 'not_awaiting', message: 'no call waits for approval a1' } },
      ]);
    expect(decided.state.awaiting).toEqual([]);
    expect(decided.events.map(onceKey)).toEqual(['approval-decision:d1', 'approval-decision:d2']);
    expect(receiptKeys(approval('d1', 'a1', 'approve'))).toEqual(['approval-decision:d1']);
  });

  it('refused: another subject (forbidden), an unknown approval, edited arguments the tool refuses, a turn asked to stop; a denial keeps no arguments', () => {
    const codes = (head: Given, input: InputRecord) => head.when(input).events.map((e) => (e.type === 'approval.refused' ? e.data.code : e.type));
    expect(codes(waiting(), { ...approval('d1', 'a1', 'approve'), subject: 'mallory' })).toEqual(['forbidden']);
    expect(codes(waiting(), approval('d1', 'nope', 'approve'))).toEqual(['not_awaiting']);
    expect(codes(waiting(), approval('d1', 'a1', 'approve', { arguments: '{"cc":"x"}' }))).toEqual(['invalid_arguments']);
    expect(codes(waiting().and(stop('s')), approval('d1', 'a1', 'approve'))).toEqual(['not_awaiting']);
    const denied = waiting().when(approval('d1', 'a1', 'deny', { arguments: '{"cc":"x"}', reason: 'no' })).events[0];
    expect(denied).toMatchObject({ type: 'approval.decided', data: { decision: 'deny', reason: 'no', arguments: null } });
  });

  it('its refusals say why, naming the turn’s ending or the tool and what its schema refused', () => {
    const message = (head: Given, input: InputRecord) => head.when(input).events.map((e) => (e.type === 'approval.refused' ? e.data.message : e.type))[0];
    expect(message(waiting(), approval('d1', 'a1', 'approve', { arguments: '{"cc":"x"}' }))).toMatch(/send.*to is required/);
    expect(message(waiting().and(stop('s')), approval('d1', 'a1', 'approve'))).toContain('stop');
  });

  it('edited arguments are not checked when the deployment checks none', () => {
    const unchecked = deciderSpec(agentsWith(policy)).given(waiting().events);
    expect(unchecked.when(approval('d1', 'a1', 'approve', { arguments: '{"cc":"x"}' })).events).toMatchObject([{ type: 'approval.decided', data: { arguments: '{"cc":"x"}' } }]);
  });

  it('a decision closes its own call only; its receipt is the decision (or the refusal) as stored', () => {
    const two = waiting().andStored({ type: 'approval.requested', data: { turn: 't1', step: 0, approval: 'a2', call: { id: 'c2', name: 'look', arguments: '{}' }, requestedAt: sentAt, expiresAt: null } });
    const decided = two.when(approval('d1', 'a1', 'deny', { reason: 'no' }));
    expect(decided.state.awaiting.map((a) => a.approval)).toEqual(['a2']);
    const { input: _input, ...decision } = decided.events[0].data as { input: string };
    expect(receiptOf(approval('d1', 'a1', 'deny'), decided.events[0])).toEqual({ answer: decision });
    const [refused] = two.when(approval('d2', 'nope', 'deny')).events;
    expect(receiptOf(approval('d2', 'nope', 'deny'), refused)).toEqual({ refusal: { code: 'not_awaiting', message: 'no call waits for approval nope' } });
  });

  it("a timeout's decision is once per call, and never under a person's decision's key", () => {
    const timedOut = (approval: string): DomainEvent => ({
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval, callId: 'c1', tool: 'send', decision: 'deny', reason: 'timed out', arguments: null, subject: null, input: null },
    });
    const keys = [onceKey(timedOut('a1')), onceKey(timedOut('a2')), ...receiptKeys(approval('a1', 'a1', 'deny'))];
    expect(new Set(keys).size).toBe(3);
  });

  it('a call past its deadline is denied once, with no subject; not before, and not while the turn is asked to end', () => {
    const head = waiting('2026-12-01T00:00:10.000Z');
    expect(head.state.dueAt).toBe('2026-12-01T00:00:10.000Z');
    head.whenDue(new Date('2026-12-01T00:00:09.999Z')).thenNothing();
    const timedOut = head.whenDue(new Date('2026-12-01T00:00:10.000Z'));
    expect(timedOut.events).toMatchObject([{ type: 'approval.decided', data: { approval: 'a1', decision: 'deny', subject: null, input: null, reason: expect.stringContaining('2026-12-01T00:00:10.000Z') } }]);
    expect(timedOut.state.dueAt).toBeNull();
    timedOut.after.whenDue(new Date('2026-12-02T00:00:00.000Z')).thenNothing();
    head.and(stop('s')).whenDue(new Date('2026-12-02T00:00:00.000Z')).thenNothing();
  });

  it('the end of the turn forgets its calls: nothing waits or is due after it', () => {
    const ended: DomainEvent = { type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: 'x', content: '', steered: [] } };
    const { state } = waiting('2026-12-01T00:00:10.000Z').andStored(ended);
    expect([state.awaiting, state.openCalls, state.dueAt]).toEqual([[], [], null]);
  });
});
