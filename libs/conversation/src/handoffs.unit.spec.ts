import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { onceKey } from './event-rules';
import { evolveTurn, startTurn } from '@rudder/agent/turn';
import { base, chat, decisions, deciderSpec, policy, promote, rejections, RUNNING, sentAt, steer, stop } from './testing/decider-spec';

/**
 * Handoffs as the decider sees them (docs/agents.md, "Handoffs"): `agent.changed` makes the
 * agent it names the conversation's, so the decisions after it — a chat's agent, a steer's
 * policy, the bounds — are that agent's.
 */
const handedTo = (to: string, step = 0): DomainEvent => ({ type: 'agent.changed', data: { from: 'default', to, turn: 't1', step } });

/** `default` takes steers; `specialist` takes none and lets one chat wait. */
const { given } = deciderSpec({
  defaultAgent: 'default',
  policyOf: (name) => (name === 'default' ? policy : name === 'specialist' ? { maxTaken: 0, bounds: { ...policy.bounds, chats: 1 } } : undefined),
});

describe('a handoff (agent.changed)', () => {
  it('folds into the state: the conversation is answered by the agent it names', () => {
    expect(given(RUNNING).state.agent).toBe('default');
    expect(given([...RUNNING, handedTo('specialist')]).state.agent).toBe('specialist');
    expect(given([...RUNNING, handedTo('specialist'), handedTo('default', 1)]).state.agent).toBe('default');
  });

  it('is stored once per step of a turn (its once key): the first transfer call of a reply wins', () => {
    expect(onceKey(handedTo('specialist', 0))).toBe(onceKey(handedTo('default', 0)));
    expect(onceKey(handedTo('specialist', 0))).not.toBe(onceKey(handedTo('specialist', 1)));
  });

  it('a chat naming the agent the conversation had before the handoff is agent_mismatch; naming the new one, or none, is accepted', () => {
    const after = given([...RUNNING, handedTo('specialist')]);
    expect(rejections(after.when(chat('old', { agent: 'default' })).events)).toEqual([['old', 'agent_mismatch']]);
    after.when(chat('new', { agent: 'specialist' })).thenTypes('input.accepted');
    after.when(chat('none')).thenTypes('input.accepted');
  });

  it("a steer after the handoff follows the new agent's policy: one that takes no steers answers it as a turn of its own", () => {
    expect(decisions(given(RUNNING).when(steer('before')).events)).toEqual([['before', 't1', true]]);
    expect(decisions(given([...RUNNING, handedTo('specialist')]).when(steer('after')).events)).toEqual([['after', null, false]]);
  });

  it("a promotion after the handoff follows the new agent's policy too: the follow-up stays a turn of its own", () => {
    expect(decisions(given(RUNNING).and(chat('f')).when(promote('pr', 'f')).events)).toEqual([['f', 't1', true]]);
    expect(decisions(given([...RUNNING, handedTo('specialist')]).and(chat('f')).when(promote('pr', 'f')).events)).toEqual([['f', null, false]]);
  });

  it("the new agent's bounds decide what may wait", () => {
    const after = given([...RUNNING, handedTo('specialist')]);
    expect(rejections(after.when(chat('c1'), chat('c2')).events)).toEqual([['c2', 'queue_full']]);
    expect(rejections(given(RUNNING).when(chat('c1'), chat('c2')).events)).toEqual([]);
  });

  it('a turn asked to stop keeps the handoff it stores before its end (only a rollback takes handoffs back)', () => {
    const call = { id: 'c2', name: 'transfer_to_specialist', arguments: '{}' };
    const replied = evolveTurn(startTurn('t1', { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' }), {
      type: 'model.replied',
      data: { turn: 't1', step: 0, content: '', toolCalls: [call] },
    });
    const handoff: DomainEvent[] = [
      { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c2', name: call.name, result: 'transferred to specialist', isError: false } },
      handedTo('specialist'),
    ];
    const stored = given(RUNNING).and(stop('s1')).whenCommitting(replied, handoff).then(handoff);
    expect(stored.state.agent).toBe('specialist');
  });

  it("an approval asked for by the reply that handed on checks edited arguments by the schema of the agent that made the call", () => {
    const checked: string[] = [];
    const { given: checking } = deciderSpec({
      defaultAgent: 'default',
      policyOf: (name) => (name === 'default' || name === 'specialist' ? policy : undefined),
      argumentsError: (agent) => (checked.push(agent), null),
    });
    const call = { id: 'c1', name: 'send', arguments: '{}' };
    checking([
      ...RUNNING,
      { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [call, { id: 'c2', name: 'transfer_to_specialist', arguments: '{}' }] } },
      { type: 'approval.requested', data: { turn: 't1', step: 0, approval: 'a1', call, requestedAt: sentAt, expiresAt: null } },
      { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c2', name: 'transfer_to_specialist', result: 'transferred to specialist', isError: false } },
      handedTo('specialist'),
    ])
      .when({ ...base, type: 'approval', id: 'd1', approval: 'a1', decision: 'approve', arguments: '{"edited":true}' })
      .thenTypes('approval.decided');
    expect(checked).toEqual(['default']);
  });
});
