import { describe, expect, it } from 'vitest';
import type { DomainEvent, InputRecord } from '@rudder/contracts';
import { derivedConversationKey } from '../derived-keys';
import { evolve } from '../event-rules';
import { receiptKeys, receiptOf } from '../receipts';
import { initialState } from '../state';
import { agentsWith, base, chat, deciderSpec, IDLE, opened, policy } from '../testing/decider-spec';
import type { ForkCopy, ForkSource } from './fork';

/** A fork `id` of `from` into the spec's conversation (`c`), by `subject`. */
const fork = (id: string, extra: Partial<Extract<InputRecord, { type: 'fork' }>> = {}): InputRecord => ({ ...base, type: 'fork', id, from: 'src', ...extra });

const copy: ForkCopy = {
  from: 'src',
  atTurn: 't1',
  through: 7,
  history: [{ turn: 't1', end: 7, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] }],
  summary: null,
  todos: { items: [], next: 1 },
  agent: null,
};
/** The source: owned by alice, who granted carol read; its copy at t1 (or a refusal). */
const sourceLog: DomainEvent[] = [opened('alice'), { type: 'access.granted', data: { grant: 'g', subject: 'carol', access: 'read' } }];
const source = (of: Partial<ForkSource> = {}): ForkSource => ({
  state: sourceLog.reduce(evolve, initialState()),
  copy,
  ...of,
});
const spec = (of: ForkSource | undefined) => deciderSpec(agentsWith(policy), (input) => (input.type === 'fork' ? of : undefined));

describe('a fork under the new conversation lock', () => {
  it('opens the new conversation as the forking subject with the source agent, copies the history up to the turn, and its plan', () => {
    const planned = source({ copy: { ...copy, todos: { items: [{ n: 1, text: 'pack', status: 'pending' }], next: 2 } } });
    const { given } = spec(planned);
    const decided = given().when(fork('f1', { subject: 'carol' }));
    decided.then([
      { type: 'conversation.opened', data: { owner: 'carol', agent: 'default' } },
      { type: 'conversation.forked', data: { fork: 'f1', from: 'src', atTurn: 't1', through: 7, history: copy.history, summary: null } },
      { type: 'todos.updated', data: { turn: 't1', step: 0, callId: null, items: [{ n: 1, text: 'pack', status: 'pending' }], next: 2 } },
    ]);
    // Grants are not copied: carol owns it, alice (the source's owner) has no access to it.
    expect(decided.state).toMatchObject({ owner: 'carol', grants: {}, agent: 'default', todos: { items: [{ n: 1 }], next: 2 } });
    expect(receiptOf(fork('f1', { subject: 'carol' }), decided.events[1])).toEqual({ answer: { key: 'c', from: 'src', atTurn: 't1' } });
  });

  it('opens the new conversation with the agent that answered the source when the turn ended (a handoff before it chose it), not the one answering it now', () => {
    spec(source({ copy: { ...copy, agent: 'specialist' } }))
      .given()
      .when(fork('f1', { subject: 'carol' }))
      .thenTypes('conversation.opened', 'conversation.forked')
      .then([
        { type: 'conversation.opened', data: { owner: 'carol', agent: 'specialist' } },
        { type: 'conversation.forked', data: { fork: 'f1', from: 'src', atTurn: 't1', through: 7, history: copy.history, summary: null } },
      ]);
  });

  it('is answered once: the same fork again adds nothing; the same id asking another source or turn is an id reused', () => {
    const { given } = spec(source());
    const forked = given().when(fork('f1')).after;
    forked.when(fork('f1')).thenNothing();
    const stored = forked.events.find((e) => e.type === 'conversation.forked')!;
    expect(receiptOf(fork('f1', { atTurn: 't0' }), stored)).toEqual({ reused: true });
    // Naming the turn it copied is the same fork.
    expect(receiptOf(fork('f1', { atTurn: 't1' }), stored)).toEqual({ answer: { key: 'c', from: 'src', atTurn: 't1' } });
    expect(receiptOf(fork('f1', { from: 'other' }), stored)).toEqual({ reused: true });
    expect(receiptKeys(fork('f1'))).toEqual(['fork:f1']);
  });

  it('needs read on the source: none, or no source at all, is refused and opens nothing', () => {
    spec(source()).given().when(fork('f1', { subject: 'mallory' })).thenRefused('forbidden');
    spec(undefined).given().when(fork('f1')).thenRefused('not_found');
    spec(source({ state: initialState() })).given().when(fork('f1')).thenRefused('not_found');
  });

  it('refuses an `into` that is a conversation already (409), whoever owns it', () => {
    const { given } = spec(source());
    given(IDLE).when(fork('f1')).thenRefused('conflict');
    given().and(chat('a', { subject: 'bob' })).when(fork('f2')).thenRefused('conflict');
  });

  it('its refusals name what they are about, and answer only the same fork (source and turn) under its id', () => {
    const refusal = (of: ForkSource | undefined, input: InputRecord, head: readonly DomainEvent[] = []) => {
      const [event] = spec(of).given(head).when(input).events;
      return { event, message: event.type === 'fork.refused' ? event.data.message : '' };
    };
    expect(refusal(undefined, fork('f1')).message).toContain('src');
    expect(refusal(source(), fork('f1', { subject: 'mallory' })).message).toMatch(/mallory.*src/);
    expect(refusal(source(), fork('f1'), IDLE).message).toContain('exists');
    const { event } = refusal(undefined, fork('f1', { atTurn: 't1' }));
    expect(receiptOf(fork('f1', { atTurn: 't1' }), event)).toMatchObject({ refusal: { code: 'not_found' } });
    expect(receiptOf(fork('f1', { atTurn: 't2' }), event)).toEqual({ reused: true });
    expect(receiptOf(fork('f1'), event)).toEqual({ reused: true });
    expect(receiptOf(fork('f1', { from: 'other', atTurn: 't1' }), event)).toEqual({ reused: true });
    const latest = refusal(undefined, fork('f2')).event;
    expect(receiptOf(fork('f2'), latest)).toMatchObject({ refusal: { code: 'not_found' } });
    expect(receiptOf(fork('f2', { atTurn: 't1' }), latest)).toEqual({ reused: true });
  });

  it('a refused fork is answered once too: the same fork again adds nothing', () => {
    const refused = spec(undefined).given().when(fork('f1')).after;
    refused.when(fork('f1')).thenNothing();
  });

  it("answers the source's refusal of the turn: unknown or rolled back (404), still running (409)", () => {
    spec(source({ copy: { refusal: 'not_found', message: 'no such turn' } })).given().when(fork('f1', { atTurn: 'zz' })).thenRefused('not_found');
    spec(source({ copy: { refusal: 'busy', message: 'running' } })).given().when(fork('f1', { atTurn: 't2' })).thenRefused('busy');
  });

  it('opens a key the Responses door derives only for the subject and nonce that derive it', () => {
    const { given } = spec(source());
    const derived = derivedConversationKey('alice', 'n1');
    given().when(fork('f1', { conversation: derived })).thenRefused('forbidden');
    given().when(fork('f1', { conversation: derived, derivedFrom: 'n2' })).thenRefused('forbidden');
    given().when(fork('f1', { conversation: derivedConversationKey('carol', 'n1'), derivedFrom: 'n1' })).thenRefused('forbidden');
    expect(given().when(fork('f1', { conversation: derived, derivedFrom: 'n1' })).events.map((e) => e.type)).toEqual(['conversation.opened', 'conversation.forked']);
  });
});
