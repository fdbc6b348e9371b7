import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { evolveTurn, startTurn } from '@rudder/agent/turn';
import { agentsWith, chat, deciderSpec, IDLE, policy, RUNNING, steer } from '../testing/decider-spec';

const { given } = deciderSpec();
/** An agent whose turns take no steers. */
const none = deciderSpec(agentsWith({ ...policy, maxTaken: 0 }));

describe('a chat while a turn runs', () => {
  it('ifSteerable refuses a chat while a turn of an agent that takes no steers runs; otherwise it is an ordinary chat', () => {
    none.given(RUNNING).when(chat('x', { ifSteerable: true, onBusy: 'interrupt' })).thenRefused('busy');
    given(RUNNING).when(chat('x', { ifSteerable: true, onBusy: 'interrupt' })).thenTypes('input.accepted', 'stop.requested');
    none.given(IDLE).when(chat('x', { ifSteerable: true })).thenTypes('input.accepted');
  });

  it("a chat continuing the running turn's input winds that turn down and runs next; one continuing a queued input queues behind it and winds nothing down", () => {
    const continuing = given(RUNNING).when(chat('r2', { continues: 'p0', ifLastInputId: 'p0' }));
    expect(continuing.events.at(-1)).toEqual({ type: 'stop.requested', data: { stop: 'r2', turn: 't1', mode: 'interrupt' } });
    expect(continuing.state.ending).toBe('interrupt');
    const queued = given(RUNNING).when(chat('r2'), chat('r3', { continues: 'r2', ifLastInputId: 'r2' })).thenTypes('input.accepted', 'input.accepted');
    expect(queued.state.ending).toBeNull();
    expect(queued.state.queue.map((q) => q.id)).toEqual(['r2', 'r3']);
    // With no turn running it is an ordinary chat.
    given(IDLE).when(chat('r2', { continues: 'p0' })).thenTypes('input.accepted');
  });

  it('ifSteerable refuses a continuing chat only where it would wind down a turn of an agent that takes no steers', () => {
    none.given(RUNNING).when(chat('r2', { continues: 'p0', ifSteerable: true })).thenRefused('busy');
    none.given(RUNNING).when(chat('r2'), chat('r3', { continues: 'r2', ifSteerable: true })).thenTypes('input.accepted', 'input.accepted');
  });

  it('onBusy reject refuses a chat while a turn runs, and accepts it when none does', () => {
    given(RUNNING).when(chat('x', { onBusy: 'reject' })).thenRefused('busy');
    given(IDLE).when(chat('x', { onBusy: 'reject' })).thenTypes('input.accepted');
  });

  it('a busy refusal says which turn runs and why the chat is not taken', () => {
    const refusal = (decided: { events: DomainEvent[] }) => (decided.events[0]?.type === 'input.rejected' ? decided.events[0].data.message : undefined);
    expect(refusal(given(RUNNING).when(chat('x', { onBusy: 'reject' })))).toBe('a turn is running (t1) and onBusy is reject');
    expect(refusal(none.given(RUNNING).when(chat('x', { ifSteerable: true, onBusy: 'interrupt' })))).toBe(
      'a turn is running (t1) and the agent takes no steers, so it is not wound down for another input',
    );
  });

  it('without ifSteerable a chat winds down even a turn of an agent that takes no steers', () => {
    none.given(RUNNING).when(chat('x', { onBusy: 'interrupt' })).thenTypes('input.accepted', 'stop.requested');
    none.given(RUNNING).when(chat('r2', { continues: 'p0' })).thenTypes('input.accepted', 'stop.requested');
  });

  it('onBusy interrupt ends the running turn at its next step, and the chat runs next', () => {
    const interrupted = given(RUNNING).when(chat('queued'), chat('now', { onBusy: 'interrupt' }));
    expect(interrupted.events.at(-1)).toEqual({ type: 'stop.requested', data: { stop: 'now', turn: 't1', mode: 'interrupt' } });
    expect(interrupted.state.queue.map((q) => q.id)).toEqual(['now', 'queued']);
    const afterReply = evolveTurn(startTurn('t1', { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' }), {
      type: 'model.replied',
      data: { turn: 't1', step: 0, content: 'working', toolCalls: [{ id: 'c1', name: 'wait', arguments: '{}' }] },
    });
    const result: DomainEvent = { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'ok', isError: false } };
    const stored = interrupted.after.whenCommitting(afterReply, [result]);
    expect(stored.events.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'superseded', content: 'working' } });
  });

  it('onBusy rollback asks for the turn to stop now, as a rollback', () => {
    expect(given(RUNNING).when(chat('now', { onBusy: 'rollback' })).events.at(-1)).toEqual({
      type: 'stop.requested',
      data: { stop: 'now', turn: 't1', mode: 'rollback' },
    });
  });
});

describe("a chat's place at acceptance (the 202's position)", () => {
  const aheadOf = (events: DomainEvent[]) => events.flatMap((e) => (e.type === 'input.accepted' && e.data.input.kind === 'chat' ? [[e.data.input.id, e.data.ahead]] : []));

  it('counts the follow-ups waiting and the running turn; a steer that missed its turn waits among them', () => {
    expect(aheadOf(given(IDLE).when(chat('a')).events)).toEqual([['a', 0]]);
    expect(aheadOf(given(IDLE).when(chat('a'), chat('b'), steer('s'), chat('c')).events)).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 3],
    ]);
    expect(aheadOf(given(RUNNING).when(chat('a'), chat('b')).events)).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });
});
