import { describe, expect, it } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import { evolveTurn, startTurn } from '@rudder/agent';
import { idleHead, type ConversationHead } from '@rudder/event-store';
import { acceptInputs, probeKey, takeSteersAtStep } from './decisions';

const sentAt = '2026-11-30T00:00:00.000Z';
const steer = (id: string, text = id): InputRecord => ({ v: 1, type: 'steer', id, conversation: 'c', subject: 'alice', text, sentAt });
const chat = (id: string): InputRecord => ({ v: 1, type: 'chat', id, conversation: 'c', subject: 'alice', messages: [id], sentAt });
const running = (turn = 't1', steersLanded = 0, steers: ConversationHead['steers'] = []): ConversationHead => ({ runningTurn: turn, steers, steersLanded });
const decisions = (events: DomainEvent[]) => events.flatMap((e) => (e.type === 'steer.accepted' ? [[e.data.input.id, e.data.turn, e.data.landed]] : []));

describe('deciding a steer under the conversation lock', () => {
  it('a steer sent while a turn runs lands on that turn', () => {
    expect(decisions(acceptInputs(running(), [steer('s')], new Set(), { maxTaken: 16 }))).toEqual([['s', 't1', true]]);
  });

  it('a steer sent when no turn runs does not land: it becomes a turn of its own', () => {
    expect(decisions(acceptInputs(idleHead(), [steer('s')], new Set(), { maxTaken: 16 }))).toEqual([['s', null, false]]);
  });

  it('past the cap, and to an agent whose turns take none, a steer does not land', () => {
    const batch = [steer('a'), steer('b'), steer('c')];
    expect(decisions(acceptInputs(running('t1', 1), batch, new Set(), { maxTaken: 2 }))).toEqual([
      ['a', 't1', true],
      ['b', null, false],
      ['c', null, false],
    ]);
    expect(decisions(acceptInputs(running(), [steer('a')], new Set(), { maxTaken: 0 }))).toEqual([['a', null, false]]);
  });

  it('an input stored before, or twice in one batch, adds nothing', () => {
    const events = acceptInputs(running(), [chat('x'), steer('s'), steer('s')], new Set([probeKey(chat('x'))]), { maxTaken: 16 });
    expect(events.map((e) => e.type)).toEqual(['input.accepted', 'steer.accepted']);
  });

  it('a stop names the running turn, or none', () => {
    const stop: InputRecord = { v: 1, type: 'stop', id: 'halt', conversation: 'c', subject: 'alice', sentAt };
    expect(acceptInputs(running(), [stop], new Set(), { maxTaken: 16 })).toEqual([{ type: 'stop.requested', data: { stop: 'halt', turn: 't1' } }]);
    expect(acceptInputs(idleHead(), [stop], new Set(), { maxTaken: 16 })).toEqual([{ type: 'stop.requested', data: { stop: 'halt', turn: null } }]);
  });
});

describe('taking steers at a step', () => {
  const prompt = { id: 'p', text: 'p', messages: ['p'] };
  const calls = [
    { id: 'c1', name: 'wait', arguments: '{}' },
    { id: 'c2', name: 'wait', arguments: '{}' },
  ];
  const afterReply = evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: calls } });
  const result = (callId: string): DomainEvent => ({ type: 'tool.ended', data: { turn: 't1', step: 0, callId, name: 'wait', result: 'ok', isError: false } });
  const waiting = running('t1', 2, [
    { id: 's1', text: 'one' },
    { id: 's2', text: 'two' },
  ]);

  it('not while a call of the reply is still open', () => {
    expect(takeSteersAtStep(waiting, afterReply, [result('c1')])).toEqual([result('c1')]);
  });

  it('with the last result of the reply, after it, in the order they were sent', () => {
    const turn = evolveTurn(afterReply, result('c1'));
    expect(takeSteersAtStep(waiting, turn, [result('c2')])).toEqual([
      result('c2'),
      { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 'one' } } },
      { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's2', text: 'two' } } },
    ]);
  });

  it('with the final answer, instead of ending the turn: it takes one more step', () => {
    const final: DomainEvent[] = [
      { type: 'model.replied', data: { turn: 't1', step: 0, content: 'done', toolCalls: [] } },
      { type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'done', steered: [] } },
    ];
    const stored = takeSteersAtStep(waiting, startTurn('t1', prompt), final);
    expect(stored.map((e) => e.type)).toEqual(['model.replied', 'steer.taken', 'steer.taken']);
    expect(stored[1]).toMatchObject({ data: { step: 1 } });
  });

  it('not when the turn ends stopped or failed: what it did not take becomes turns of their own', () => {
    const stopped: DomainEvent[] = [{ type: 'turn.ended', data: { turn: 't1', status: 'stopped', outcome: null, content: '', steered: [] } }];
    expect(takeSteersAtStep(waiting, startTurn('t1', prompt), stopped)).toEqual(stopped);
  });

  it('a turn nobody steered stores exactly what it asked to', () => {
    const turn = evolveTurn(afterReply, result('c1'));
    expect(takeSteersAtStep(running(), turn, [result('c2')])).toEqual([result('c2')]);
  });
});
