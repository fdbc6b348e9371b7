import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { evolveTurn, nextAction, startTurn } from '@rudder/agent/turn';
import { onceKey } from '../event-rules';
import { chat, deciderSpec, IDLE, RUNNING, steer, stop } from '../testing/decider-spec';

const { given } = deciderSpec();

describe('a stop under the conversation lock', () => {
  it('stop with discardPending discards every pending input', () => {
    const { state } = given(RUNNING).and(chat('a'), steer('s')).when(stop('halt', { discardPending: true })).thenTypes('stop.requested', 'input.discarded', 'input.discarded');
    expect(state.queue).toEqual([]);
    expect(state.steers).toEqual([]);
  });

  it('a stop naming a turn no longer running stops and discards nothing; naming the running one stops it; none running, it names none', () => {
    given(RUNNING).and(chat('a')).when(stop('old', { turn: 't0', discardPending: true })).then([{ type: 'stop.requested', data: { stop: 'old', turn: null, mode: 'stop' } }]);
    given(RUNNING).when(stop('now', { turn: 't1' })).then([{ type: 'stop.requested', data: { stop: 'now', turn: 't1', mode: 'stop' } }]);
    given(IDLE).when(stop('idle')).then([{ type: 'stop.requested', data: { stop: 'idle', turn: null, mode: 'stop' } }]);
  });

  it('each input is discarded once, by whichever stop discards it first', () => {
    const discarded = (id: string, stopId: string): DomainEvent => ({ type: 'input.discarded', data: { input: { id, kind: 'chat', text: id }, stop: stopId } });
    expect(onceKey(discarded('a', 'halt'))).toBe(onceKey(discarded('a', 'again')));
    expect(onceKey(discarded('a', 'halt'))).not.toBe(onceKey(discarded('b', 'halt')));
  });

  it('a stop from a subject that may not write stops nothing', () => {
    given(RUNNING).when(stop('x', { subject: 'mallory' })).thenRefused('forbidden');
  });
});

describe('winding down (an interrupt, a graceful stop)', () => {
  const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };

  it('a graceful stop asks the running turn to wind down; a plain one stops it', () => {
    given(RUNNING).when(stop('s', { graceful: true })).then([{ type: 'stop.requested', data: { stop: 's', turn: 't1', mode: 'wind-down' } }]);
    given(RUNNING).when(stop('s')).then([{ type: 'stop.requested', data: { stop: 's', turn: 't1', mode: 'stop' } }]);
  });

  it('a later, softer request never undoes a harder one: a graceful stop or an interrupt after a stop still stops; a stop after a graceful stop stops', () => {
    expect(given(RUNNING).when(stop('s1'), stop('s2', { graceful: true }), chat('now', { onBusy: 'interrupt' })).state.ending).toBe('stop');
    const turn = given(RUNNING).when(stop('s1'), stop('s2', { graceful: true })).events.reduce(evolveTurn, startTurn('t1', prompt));
    expect(nextAction(turn, { maxSteps: 5 })).toEqual({ type: 'end', status: 'stopped', outcome: 'stopped on request' });
    expect(given(RUNNING).when(stop('s1', { graceful: true }), stop('s2')).state.ending).toBe('stop');
  });
});

describe('a stop request as the state folds it', () => {
  it('asks only the running turn to end: one for no turn, or for a turn that already ended, changes nothing', () => {
    const head = given(RUNNING).and(chat('a'));
    for (const turn of [null, 't0']) {
      expect(head.andStored({ type: 'stop.requested', data: { stop: 'a', turn, mode: 'interrupt' } }).state).toEqual(head.state);
    }
    // None running: a stop for no turn asks nothing to end, nor moves the input it names.
    const idle = given(IDLE).and(chat('a'), chat('b'));
    expect(idle.andStored({ type: 'stop.requested', data: { stop: 'b', turn: null, mode: 'stop' } }).state).toEqual(idle.state);
    const asked = head.andStored({ type: 'stop.requested', data: { stop: 'a', turn: 't1', mode: 'interrupt' } }).state;
    expect(asked.ending).toBe('interrupt');
    expect(asked.queue.map((p) => [p.id, p.seq])).toEqual([['a', 0]]);
  });
});
