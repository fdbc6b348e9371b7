import { describe, expect, it } from 'vitest';
import { chatWithToolCall, conversationLog } from '../../../../test/support/companion/conversation-log';
import { initialState } from '@rudder/conversation';
import { foldState } from './conversation-state';
import { foldRows, rowsNeeded, type Rows } from './fold-rows';

const nothing: Rows = { conversations: [], inputs: [], turns: [] };

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
      },
    ]);
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
    });
  });
});
