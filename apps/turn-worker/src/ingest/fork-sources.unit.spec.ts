import { describe, expect, it } from 'vitest';
import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { emptyConversation, evolveConversation } from '../turns/conversation';
import { forkSourceOf } from './fork-sources';

/** A source's log: alice opens it, and each text is a chat answered by a turn of its own. */
function log(...texts: string[]): ConversationEvent[] {
  const events: DomainEvent[] = [{ type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } }];
  for (const text of texts) {
    events.push(
      { type: 'input.accepted', data: { input: { id: text, kind: 'chat', text, messages: [text], subject: 'alice', sentAt: '2026-01-01T00:00:00.000Z' } } },
      { type: 'turn.started', data: { turn: `t-${text}`, prompt: { id: text, text } } },
      { type: 'model.replied', data: { turn: `t-${text}`, step: 0, content: `answer to ${text}`, toolCalls: [] } } as DomainEvent,
      { type: 'turn.ended', data: { turn: `t-${text}`, status: 'completed', outcome: null, content: `answer to ${text}`, steered: [] } },
    );
  }
  return events.map((e, i) => ({ ...e, id: `e${i}`, conversation: 'src', position: i + 1, at: '2026-01-01T00:00:00.000Z' }) as ConversationEvent);
}
const contents = (history: { messages: { content: string }[] }[]) => history.flatMap((t) => t.messages.map((m) => m.content));

describe('a fork source', () => {
  it('copies the history as the fold held it when the turn ended, and the fork folds it as its own earlier turns', () => {
    const source = forkSourceOf({ from: 'src', atTurn: 't-two' }, log('one', 'two', 'three'), null);
    if ('refusal' in source.copy) throw new Error(source.copy.message);
    expect(contents(source.copy.history)).toEqual(['one', 'answer to one', 'two', 'answer to two']);
    expect(source.copy.through).toBe(9);
    const forked = evolveConversation(emptyConversation(null), { type: 'conversation.forked', data: { fork: 'f', ...source.copy } });
    expect(contents(forked.history)).toEqual(['one', 'answer to one', 'two', 'answer to two']);
  });

  it("takes the agent that answered when the turn ended: a handoff in a later turn is not the fork's", () => {
    const events = log('one', 'two');
    const handoff = { type: 'agent.changed', data: { from: 'default', to: 'specialist', turn: 't-two', step: 0 }, id: 'h', conversation: 'src', position: 9, at: events[0].at } as ConversationEvent;
    // The handoff is stored in t-two, before its end (which moves to position 10).
    const handed = [...events.slice(0, 8), handoff, ...events.slice(8).map((e) => ({ ...e, position: e.position + 1 }))];
    expect(forkSourceOf({ from: 'src', atTurn: 't-one' }, handed, null).copy).toMatchObject({ agent: 'default' });
    expect(forkSourceOf({ from: 'src', atTurn: 't-two' }, handed, null).copy).toMatchObject({ agent: 'specialist' });
    expect(forkSourceOf({ from: 'src', atTurn: 't-one' }, handed, null).state.agent).toBe('specialist');
  });

  it('forks at the latest turn that ended by default; an unknown or rolled-back turn is not_found, a running one busy', () => {
    const events = log('one', 'two');
    const latest = forkSourceOf({ from: 'src' }, events, null).copy;
    expect('refusal' in latest ? latest : latest.atTurn).toBe('t-two');
    const rolled = [...events, { type: 'turns.rolledBack', data: { rollback: 'r', asked: { turns: 1 }, turns: ['t-two'], stopped: null }, id: 'r', conversation: 'src', position: 99, at: events[0].at } as ConversationEvent];
    expect(forkSourceOf({ from: 'src', atTurn: 't-two' }, rolled, null).copy).toMatchObject({ refusal: 'not_found' });
    expect(forkSourceOf({ from: 'src' }, rolled, null).copy).toMatchObject({ atTurn: 't-one' });
    const running = log('one', 'two').slice(0, -1);
    expect(forkSourceOf({ from: 'src', atTurn: 't-two' }, running, null).copy).toMatchObject({ refusal: 'busy' });
  });
});
