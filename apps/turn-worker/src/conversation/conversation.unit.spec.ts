import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { decide, fold } from './conversation';

const accepted = (id: string, ...messages: string[]): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: messages.join('\n\n'), messages, subject: 'alice', sentAt: '2026-11-30T00:00:00.000Z' } },
});
const started = (turn: string, id: string, text: string): DomainEvent => ({ type: 'turn.started', data: { turn, prompt: { id, text } } });
const replied = (turn: string, step: number, content: string, toolCalls: { id: string; name: string; arguments: string }[] = []): DomainEvent => ({
  type: 'model.replied',
  data: { turn, step, content, toolCalls },
});
const toolEnded = (turn: string, step: number, callId: string, result: string): DomainEvent => ({
  type: 'tool.ended',
  data: { turn, step, callId, name: 'wait', result, isError: false },
});
const ended = (turn: string, content: string): DomainEvent => ({
  type: 'turn.ended',
  data: { turn, status: 'completed', outcome: null, content, steered: [] },
});

describe('the conversation fold', () => {
  it('given no events, starting the next turn decides nothing', () => {
    expect(decide(fold([]), { type: 'start-next-turn', turn: 't1' })).toEqual([]);
  });

  it('given accepted inputs, the next turn answers the oldest one first', () => {
    const state = fold([accepted('a', 'first'), accepted('b', 'second')]);
    expect(decide(state, { type: 'start-next-turn', turn: 't1' })).toEqual([started('t1', 'a', 'first')]);
  });

  it('given a running turn, no other turn starts until it ends', () => {
    const state = fold([accepted('a', 'first'), accepted('b', 'second'), started('t1', 'a', 'first')]);
    expect(state.queue.map((p) => p.id)).toEqual(['b']);
    expect(decide(state, { type: 'start-next-turn', turn: 't2' })).toEqual([]);
    const after = fold([ended('t1', 'done')], fold([replied('t1', 0, 'done')], state));
    expect(decide(after, { type: 'start-next-turn', turn: 't2' })).toEqual([started('t2', 'b', 'second')]);
  });

  it('a stored reply with tool calls leaves those calls open until their results are stored', () => {
    const call = { id: 'c1', name: 'wait', arguments: '{"ms":5}' };
    const state = fold([accepted('a', 'wait please'), started('t1', 'a', 'wait please'), replied('t1', 0, 'waiting', [call])]);
    expect(state.running?.openCalls).toEqual([call]);
    expect(state.running?.steps).toBe(1);
    const after = fold([toolEnded('t1', 0, 'c1', 'waited 5 ms')], state);
    expect(after.running?.openCalls).toEqual([]);
    expect(after.running?.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'waited 5 ms' });
  });

  it('later turns see an earlier turn as its prompt, then its answers, without its tool traffic', () => {
    const call = { id: 'c1', name: 'wait', arguments: '{"ms":5}' };
    const state = fold([
      accepted('a', 'one', 'two'),
      started('t1', 'a', 'one\n\ntwo'),
      replied('t1', 0, 'let me wait', [call]),
      toolEnded('t1', 0, 'c1', 'waited 5 ms'),
      replied('t1', 1, 'done'),
      ended('t1', 'let me wait\n\ndone'),
    ]);
    expect(state.running).toBeNull();
    expect(state.history).toEqual([
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: 'let me wait' },
      { role: 'assistant', content: 'done' },
    ]);
  });
});
