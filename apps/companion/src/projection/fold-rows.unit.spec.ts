import { describe, expect, it } from 'vitest';
import { chatWithToolCall, conversationLog } from '../../../../test/support/companion/conversation-log';
import { initialState } from '@rudder/conversation';
import { foldState } from './conversation-state';
import { decisionText } from './fold-approvals';
import { foldRows, rowsNeeded, type Rows } from './fold-rows';

const nothing: Rows = { conversations: [], inputs: [], turns: [], approvals: [] };

/** A turn whose first reply calls `send_email` twice (`c1`, `c2`), each waiting for approval (`a1`, `a2`; `a1` times out). */
function awaitingTwo() {
  const log = conversationLog('c');
  const calls = [
    { id: 'c1', name: 'send_email', arguments: '{"to":"a"}' },
    { id: 'c2', name: 'send_email', arguments: '{"to":"b"}' },
  ];
  const requested = (approval: string, call: (typeof calls)[number], expiresAt: string | null) =>
    log.event({ type: 'approval.requested', data: { turn: 't', step: 0, approval, call, requestedAt: '2025-01-01T12:00:04.000Z', expiresAt } });
  const events = [
    log.accepted('i', 'mail them'),
    log.started('t', { id: 'i', text: 'mail them' }),
    log.replied('t', 0, '', calls),
    requested('a1', calls[0], '2025-01-01T12:01:04.000Z'),
    requested('a2', calls[1], null),
  ];
  type Decision = { decision: 'approve' | 'deny'; reason?: string; arguments?: string; subject?: string | null };
  const decided = (approval: string, callId: string, d: Decision) =>
    log.event({
      type: 'approval.decided',
      data: {
        turn: 't',
        step: 0,
        approval,
        callId,
        tool: 'send_email',
        decision: d.decision,
        reason: d.reason ?? null,
        arguments: d.arguments ?? null,
        subject: d.subject === undefined ? 'alice' : d.subject,
        input: d.subject === null ? null : `d-${approval}`,
      },
    });
  return { log, events, decided, before: foldRows(nothing, events) };
}

describe('foldRows', () => {
  it('makes the first subject the owner of a log older than conversation.opened, and the latest accepted input the last one', () => {
    const log = conversationLog('c');
    const changes = foldRows(nothing, [log.accepted('a', 'hi', 'alice'), log.accepted('b', 'hello', 'bob')]);
    expect(changes.conversations).toEqual([
      { key: 'c', position: 2, state: expect.objectContaining({ owner: 'alice', agent: null, grants: {}, lastInputId: 'b', runningTurn: null }), runningStartedAt: null },
    ]);
    expect(changes.inputs.map((i) => [i.id, i.state])).toEqual([
      ['a', 'pending'],
      ['b', 'pending'],
    ]);
    expect(changes.transcript).toEqual([]);
  });

  it('takes owner and agent from conversation.opened, and gives each turn the agent and its summed usage', () => {
    const log = conversationLog('c');
    const usage = { promptTokens: 10, completionTokens: 2, totalTokens: 12 };
    const changes = foldRows(nothing, [
      log.event({ type: 'conversation.opened', data: { owner: 'bob', agent: 'trip-planner' } }),
      log.accepted('a', 'hi', 'bob'),
      log.event({ type: 'turn.started', data: { turn: 't1', prompt: { id: 'a', text: 'hi' } } }),
      log.event({ type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [], usage } }),
      log.event({ type: 'model.replied', data: { turn: 't1', step: 1, content: 'hello', toolCalls: [], usage } }),
    ]);
    expect(changes.conversations[0].state).toMatchObject({ owner: 'bob', agent: 'trip-planner' });
    expect(changes.turns[0]).toMatchObject({ agent: 'trip-planner', usage: { promptTokens: 20, completionTokens: 4, totalTokens: 24 } });
  });

  it('gives a turn that handed the conversation on the agent it was handed to, and the status that agent', () => {
    const log = conversationLog('c');
    const changes = foldRows(nothing, [
      log.event({ type: 'conversation.opened', data: { owner: 'bob', agent: 'triage' } }),
      log.accepted('a', 'hi', 'bob'),
      log.event({ type: 'turn.started', data: { turn: 't1', prompt: { id: 'a', text: 'hi' } } }),
      log.event({ type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [{ id: 'h', name: 'transfer_to_billing', arguments: '{}' }] } }),
      log.event({ type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'h', name: 'transfer_to_billing', result: 'transferred to billing', isError: false } }),
      log.event({ type: 'agent.changed', data: { from: 'triage', to: 'billing', turn: 't1', step: 0 } }),
    ]);
    expect(changes.conversations[0].state).toMatchObject({ agent: 'billing' });
    expect(changes.turns[0]).toMatchObject({ id: 't1', agent: 'billing' });
  });

  it('delivers the prompt input of a started turn, loaded from before the batch', () => {
    const log = conversationLog('c');
    const accepted = foldRows(nothing, [log.accepted('a', ['x', 'y'])]);
    const started = log.started('t', { id: 'a', text: 'x\n\ny' });
    const changes = foldRows(accepted, [started]);
    expect(changes.inputs).toMatchObject([{ id: 'a', state: 'delivered' }]);
    expect(changes.conversations).toMatchObject([{ state: { runningTurn: 't' }, runningStartedAt: started.at }]);
    expect(changes.transcript.map((m) => [m.id, m.part, m.text])).toEqual([
      ['a#1', 0, 'x'],
      ['a#2', 1, 'y'],
    ]);
  });

  it('shows a prompt it never saw accepted as the prompt text, under the prompt id', () => {
    const log = conversationLog('c');
    const changes = foldRows(nothing, [log.started('t', { id: 'elsewhere', text: 'from another service' })]);
    expect(changes.transcript).toMatchObject([{ id: 'elsewhere', role: 'user', text: 'from another service' }]);
    expect(changes.inputs).toEqual([]);
  });

  it('gives a running turn the replies so far and an ended turn its final content', () => {
    const events = chatWithToolCall('c');
    const running = foldRows(nothing, events.slice(0, 6));
    expect(running.turns).toMatchObject([{ status: 'running', content: 'Let me check the weather.\n\nLisbon is sunny: go in May.' }]);
    const ended = foldRows(running, events.slice(6));
    expect(ended.turns).toMatchObject([{ status: 'completed', content: 'Let me check the weather.\n\nLisbon is sunny: go in May.' }]);
    expect(ended.conversations).toMatchObject([{ state: { runningTurn: null }, runningStartedAt: null }]);
  });

  it("holds the state the worker's evolve folds, whether the events come in one batch or several", () => {
    const events = chatWithToolCall('c');
    const whole = foldRows(nothing, events);
    const parts = foldRows(foldRows(nothing, events.slice(0, 3)), events.slice(3));
    expect(parts.conversations).toEqual(whole.conversations);
    expect(whole.conversations[0].state).toEqual(events.reduce(foldState, initialState()));
  });

  it('records the decision on a steer and keeps it pending until a turn takes it', () => {
    const log = conversationLog('c');
    const before = foldRows(nothing, [log.accepted('a', 'go'), log.started('t', { id: 'a', text: 'go' }), log.steer('s', 'faster')]);
    const decided = foldRows(before, [log.decided({ id: 's', text: 'faster' }, 't')]);
    expect(decided.inputs).toMatchObject([{ id: 's', kind: 'steer', state: 'pending', steerTurn: 't', steerLanded: true }]);
    // A second decision on the same steer does not replace the first.
    expect(foldRows(decided, [log.decided({ id: 's', text: 'faster' }, null)]).inputs).toEqual([]);
  });

  it('delivers a taken steer, enters it as a steered user row at its position and adds it to the running turn', () => {
    const log = conversationLog('c');
    const before = foldRows(nothing, [
      log.accepted('a', 'go'),
      log.started('t', { id: 'a', text: 'go' }),
      log.steer('s', 'faster'),
      log.decided({ id: 's', text: 'faster' }, 't'),
    ]);
    const taken = log.taken('t', 0, { id: 's', text: 'faster' });
    const changes = foldRows(before, [taken]);
    expect(changes.inputs).toMatchObject([{ id: 's', state: 'delivered', steerTurn: 't', steerLanded: true }]);
    expect(changes.turns).toMatchObject([{ id: 't', status: 'running', steered: [{ id: 's', text: 'faster' }] }]);
    expect(changes.transcript).toEqual([
      {
        conversation: 'c',
        position: taken.position,
        part: 0,
        id: 's',
        role: 'user',
        text: 'faster',
        turn: 't',
        steered: true,
        at: before.inputs.find((i) => i.id === 's')!.acceptedAt,
        forkedFrom: null,
      },
    ]);
  });

  it("enters a fork's copied turns in its transcript at the fork's position, each message marked with its source turn, under ids of the fork's own", () => {
    const log = conversationLog('f');
    const opened = log.event({ type: 'conversation.opened', data: { owner: 'carol', agent: 'default' } });
    const turn = (id: string, ...texts: string[]) => ({ turn: id, end: 3, messages: texts.map((content, i) => ({ role: i === texts.length - 1 ? ('assistant' as const) : ('user' as const), content })) });
    const forked = log.event({
      type: 'conversation.forked',
      data: { fork: 'k', from: 'src', atTurn: 't2', through: 9, history: [turn('t1', 'one', 'answer one'), turn('t2', 'two', 'steered', 'answer two')], summary: null },
    });
    const changes = foldRows(nothing, [opened, forked]);
    expect(changes.transcript.map(({ conversation, position, part, id, role, text, turn, forkedFrom }) => [conversation, position, part, id, role, text, turn, forkedFrom])).toEqual([
      ['f', forked.position, 0, 'forked/t1/0', 'user', 'one', null, { key: 'src', turn: 't1' }],
      ['f', forked.position, 1, 'forked/t1/1', 'assistant', 'answer one', null, { key: 'src', turn: 't1' }],
      ['f', forked.position, 2, 'forked/t2/0', 'user', 'two', null, { key: 'src', turn: 't2' }],
      ['f', forked.position, 3, 'forked/t2/1', 'user', 'steered', null, { key: 'src', turn: 't2' }],
      ['f', forked.position, 4, 'forked/t2/2', 'assistant', 'answer two', null, { key: 'src', turn: 't2' }],
    ]);
    // No turn, input or approval of the fork's own comes of it.
    expect([changes.turns, changes.inputs, changes.approvals]).toEqual([[], [], []]);
  });

  it('moves a chat to the front of the queue only when it stops the turn running now, and only while it waits (as evolve does)', () => {
    const log = conversationLog('c');
    const before = foldRows(nothing, [log.accepted('a', 'go'), log.started('t1', { id: 'a', text: 'go' }), log.accepted('c2', 'later'), log.accepted('b', 'now')]);
    const queue = (rows: Rows) => rows.conversations[0].state.queue.map((q) => q.id);
    expect(queue(foldRows(before, [log.stopRequested('b', 't0', 'interrupt')]))).toEqual(['c2', 'b']);
    expect(queue(foldRows(before, [log.stopRequested('b', 't1', 'interrupt')]))).toEqual(['b', 'c2']);
    const retracted = foldRows(before, [log.retracted({ id: 'b', kind: 'chat', text: 'now' }, 'r')]);
    expect(queue(foldRows(retracted, [log.stopRequested('b', 't1', 'rollback')]))).toEqual(['c2']);
  });

  it('records a rejected input without touching the owner or the last input', () => {
    const log = conversationLog('c');
    const changes = foldRows(nothing, [log.rejected({ id: 'r', kind: 'steer', text: 'x' }, 'busy', 'busy')]);
    expect(changes.inputs).toMatchObject([{ id: 'r', state: 'rejected', rejectionCode: 'busy', messages: null, subject: null }]);
    expect(changes.conversations).toMatchObject([{ state: { owner: null, lastInputId: null } }]);
  });

  it('records each call waiting for approval in request order, and a decision with its reason, edited arguments, subject and time', () => {
    const { events, decided, before } = awaitingTwo();
    expect(before.approvals).toEqual([
      {
        conversation: 'c',
        approval: 'a1',
        turn: 't',
        step: 0,
        callId: 'c1',
        tool: 'send_email',
        arguments: '{"to":"a"}',
        requestedAt: '2025-01-01T12:00:04.000Z',
        expiresAt: '2025-01-01T12:01:04.000Z',
        state: 'awaiting',
        reason: null,
        editedArguments: null,
        subject: null,
        decidedAt: null,
        position: events[3].position,
      },
      expect.objectContaining({ approval: 'a2', callId: 'c2', expiresAt: null, state: 'awaiting', position: events[4].position }),
    ]);
    expect(before.conversations[0].state.awaiting.map((a) => a.approval)).toEqual(['a1', 'a2']);
    const approved = decided('a2', 'c2', { decision: 'approve', arguments: '{"to":"c"}' });
    expect(foldRows(before, [approved]).approvals).toEqual([
      expect.objectContaining({ approval: 'a2', state: 'approved', reason: null, editedArguments: '{"to":"c"}', subject: 'alice', decidedAt: approved.at }),
    ]);
    const timedOut = decided('a1', 'c1', { decision: 'deny', reason: 'timed out: nobody decided by 2025-01-01T12:01:04.000Z', subject: null });
    expect(foldRows(before, [timedOut]).approvals).toEqual([
      expect.objectContaining({ approval: 'a1', state: 'denied', reason: 'timed out: nobody decided by 2025-01-01T12:01:04.000Z', editedArguments: null, subject: null, decidedAt: timedOut.at }),
    ]);
  });

  it('enters each decision in the transcript as an approval row under its approval id, at its position', () => {
    const { decided, before } = awaitingTwo();
    const approved = decided('a1', 'c1', { decision: 'approve' });
    const denied = decided('a2', 'c2', { decision: 'deny', reason: 'wrong person' });
    expect(foldRows(before, [approved, denied]).transcript).toEqual([
      { conversation: 'c', position: approved.position, part: 0, id: 'a1', role: 'approval', text: 'approved send_email({"to":"a"})', turn: 't', steered: false, at: approved.at, forkedFrom: null },
      { conversation: 'c', position: denied.position, part: 0, id: 'a2', role: 'approval', text: 'denied send_email: wrong person', turn: 't', steered: false, at: denied.at, forkedFrom: null },
    ]);
    const text = (d: Parameters<typeof decided>[2]) => foldRows(before, [decided('a1', 'c1', d)]).transcript[0].text;
    expect(text({ decision: 'approve', arguments: '{"to":"z"}' })).toBe('approved send_email with edited arguments {"to":"z"}');
    expect(text({ decision: 'deny' })).toBe('denied send_email');
    expect(text({ decision: 'deny', reason: 'timed out: nobody decided by 2025-01-01T12:01:04.000Z', subject: null })).toBe(
      'denied send_email: timed out: nobody decided by 2025-01-01T12:01:04.000Z',
    );
    expect(decisionText({ state: 'denied', tool: 'send_email', arguments: '{}', editedArguments: null, reason: null, subject: null })).toBe('denied send_email: timed out');
  });

  it("closes an awaiting approval unrun when its call's tool.ended comes first, and leaves a decided one as it was", () => {
    const { log, decided, before } = awaitingTwo();
    const approved = foldRows(before, [decided('a2', 'c2', { decision: 'approve' })]);
    const stopped = foldRows({ ...before, approvals: [before.approvals[0], ...approved.approvals] }, [
      // Another step's call of the same id closes nothing.
      log.event({ type: 'tool.ended', data: { turn: 't', step: 1, callId: 'c1', name: 'send_email', result: 'x', isError: true } }),
      log.event({ type: 'tool.ended', data: { turn: 't', step: 0, callId: 'c1', name: 'send_email', result: 'not run: the turn was stopped while the call waited for approval', isError: true } }),
      log.event({ type: 'tool.ended', data: { turn: 't', step: 0, callId: 'c2', name: 'send_email', result: 'sent', isError: false } }),
    ]);
    expect(stopped.approvals).toEqual([expect.objectContaining({ approval: 'a1', state: 'closed', reason: null, subject: null, decidedAt: null })]);
    expect(stopped.transcript).toEqual([]);
  });

  it('closes every approval of a turn still awaiting when the turn ends', () => {
    const { log, decided, before } = awaitingTwo();
    const ended = foldRows(before, [decided('a1', 'c1', { decision: 'deny' }), log.ended('t', '', { status: 'stopped', outcome: 'stopped' })]);
    expect(ended.approvals.map((a) => [a.approval, a.state])).toEqual([
      ['a1', 'denied'],
      ['a2', 'closed'],
    ]);
    expect(ended.conversations[0].state.awaiting).toEqual([]);
  });

  it('keeps the first final state of an approval: a request or decision again, a decision after closing and a refusal change nothing', () => {
    const { log, events, decided, before } = awaitingTwo();
    const approve = decided('a1', 'c1', { decision: 'approve' });
    const once = foldRows(before, [approve]);
    const after: Rows = { ...before, approvals: [once.approvals[0], before.approvals[1]] };
    const again = foldRows(after, [events[3], approve, decided('a1', 'c1', { decision: 'deny', reason: 'changed my mind' })]);
    expect(again.approvals).toEqual([]);
    expect(again.transcript).toEqual([]);
    const closed = foldRows(before, [log.ended('t', '', { status: 'stopped' })]);
    expect(foldRows({ ...before, approvals: closed.approvals }, [decided('a2', 'c2', { decision: 'approve' })]).approvals).toEqual([]);
    const refused = foldRows(before, [log.event({ type: 'approval.refused', data: { input: 'd', approval: 'a1', code: 'forbidden', message: 'bob may not write' } })]);
    expect(refused.approvals).toEqual([]);
    expect(refused.transcript).toEqual([]);
  });

  it('names the rows a batch reads', () => {
    const log = conversationLog('c');
    expect(
      rowsNeeded([log.started('t', { id: 'a', text: 'a' }), log.ended('t', '', { steered: [{ id: 's', text: 's' }] })]),
    ).toEqual({
      conversations: ['c'],
      inputs: [
        { conversation: 'c', id: 'a' },
        { conversation: 'c', id: 's' },
      ],
      turns: [{ conversation: 'c', id: 't' }],
      approvals: [{ conversation: 'c', id: 't' }],
    });
    expect(
      rowsNeeded([
        log.decided({ id: 's1', text: 'x' }, 't'),
        log.taken('t2', 1, { id: 's2', text: 'y' }),
        log.stopRequested('stop', 't2'),
        log.retracted({ id: 'r', kind: 'chat', text: 'r' }, 'retract-1'),
        log.retractRefused('retract-2', 'x'),
      ]),
    ).toEqual({
      conversations: ['c'],
      inputs: [
        { conversation: 'c', id: 's1' },
        { conversation: 'c', id: 's2' },
        { conversation: 'c', id: 'r' },
      ],
      turns: [{ conversation: 'c', id: 't2' }],
      approvals: [],
    });
    // The approvals of a turn are read whole: a decision, a closing tool.ended or the turn's end may change any of them.
    const { events, decided } = awaitingTwo();
    expect(rowsNeeded([events[3], decided('a1', 'c1', { decision: 'approve' }), log.toolEnded('t3', 0, 'x', 'done')]).approvals).toEqual([
      { conversation: 'c', id: 't' },
      { conversation: 'c', id: 't3' },
    ]);
  });
});
