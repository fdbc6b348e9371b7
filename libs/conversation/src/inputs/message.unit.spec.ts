import { describe, expect, it } from 'vitest';
import { inputDigest, type DomainEvent, type InputRecord } from '@rudder/contracts';
import { decideInputs, type Agents, type GuardOutcome } from '../decide';
import { derivedConversationKey } from '../derived-keys';
import { evolve, onceKey } from '../event-rules';
import { receiptOf } from '../receipts';
import { initialState } from '../state';
import { agentsWith, base, chat, deciderSpec, IDLE, policy, rejections, RUNNING, sentAt, steer, types } from '../testing/decider-spec';

/** The rules every chat and steer passes (`message.ts`): who may write, the precondition, the bounds. */
const { given } = deciderSpec();

describe('the checks of every chat and steer', () => {
  it('ifLastInputId refuses an input when another one was accepted last', () => {
    const head = given(IDLE).and(chat('a'), chat('b'));
    head.when(chat('c', { ifLastInputId: 'a' })).thenRefused('precondition_failed');
    head.when(steer('s', { ifLastInputId: 'b' })).thenTypes('input.accepted', 'steer.accepted');
  });

  it('bounds: the fifth follow-up, the fifth waiting steer and text past the characters are refused as queue_full', () => {
    expect(rejections(given(IDLE).when(...['1', '2', '3', '4', '5'].map((id) => chat(id))).events)).toEqual([['5', 'queue_full']]);
    expect(rejections(given(RUNNING).when(...['1', '2', '3', '4', '5'].map((id) => steer(id))).events)).toEqual([['5', 'queue_full']]);
    const { events } = given(IDLE).when(chat('a', { messages: ['x'.repeat(5000)] }), chat('b', { messages: ['y'.repeat(3001)] }));
    expect(rejections(events)).toEqual([['b', 'queue_full']]);
    expect(events.find((e) => e.type === 'input.rejected')).toMatchObject({ data: { message: expect.stringContaining('5000 characters waiting') } });
  });

  it('a queue_full refusal names the queue that is full, what waits, and its bound', () => {
    // Bounds that differ, so each number says which bound it is.
    const bounded = deciderSpec(agentsWith({ ...policy, bounds: { steers: 2, chats: 3, chars: 8000 } }));
    const message = (events: DomainEvent[]) => events.flatMap((e) => (e.type === 'input.rejected' ? [e.data.message] : []));
    expect(message(bounded.given(IDLE).when(...['1', '2', '3', '4'].map((id) => chat(id))).events)).toEqual([
      'the follow-up queue is full (0 steering, 3 queued, 3 characters waiting; at most 3)',
    ]);
    expect(message(bounded.given(RUNNING).when(...['1', '2', '3'].map((id) => steer(id))).events)).toEqual([
      'the steering queue is full (2 steering, 0 queued, 2 characters waiting; at most 2)',
    ]);
    expect(message(bounded.given(IDLE).when(chat('a', { messages: ['x'.repeat(5000)] }), chat('b', { messages: ['y'.repeat(3001)] })).events)).toEqual([
      'too much text is waiting (0 steering, 1 queued, 5000 characters waiting; at most 8000 characters together)',
    ]);
  });

  it('the characters bound counts code points, as the 429 does: an emoji is one character', () => {
    const emoji = '\u{1F600}'.repeat(3000);
    expect(emoji.length).toBe(6000);
    given(IDLE).and(chat('a', { messages: ['x'.repeat(5000)] })).when(chat('b', { messages: [emoji] })).thenTypes('input.accepted');
    const refused = given(IDLE).and(chat('a', { messages: [emoji] })).when(chat('b', { messages: ['y'.repeat(5001)] })).thenRefused('queue_full');
    expect(refused.events[0]).toMatchObject({ data: { message: expect.stringContaining('3000 characters waiting') } });
  });
});

describe('who may write, decided with the input', () => {
  it('the first accepted input opens the conversation for its subject; a chat or steer of another subject is refused forbidden', () => {
    const opened = given([]).when(chat('a'));
    expect(opened.events[0]).toEqual({ type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } });
    const bob = { subject: 'bob' };
    const { events } = opened.after.when(chat('b', bob), steer('s', bob), chat('c'));
    expect(rejections(events)).toEqual([
      ['b', 'forbidden'],
      ['s', 'forbidden'],
    ]);
    expect(types(events)).toEqual(['input.rejected', 'input.rejected', 'input.accepted']);
  });

  it('a subject granted read may not write: its chat and steer are refused forbidden; one granted write writes', () => {
    const granted = given([
      ...IDLE,
      { type: 'access.granted', data: { grant: 'g1', subject: 'bob', access: 'read' } },
      { type: 'access.granted', data: { grant: 'g2', subject: 'carol', access: 'write' } },
    ]);
    const { events } = granted.when(chat('b', { subject: 'bob' }), steer('s', { subject: 'bob' }), chat('c', { subject: 'carol' }));
    expect(rejections(events)).toEqual([
      ['b', 'forbidden'],
      ['s', 'forbidden'],
    ]);
    expect(types(events)).toEqual(['input.rejected', 'input.rejected', 'input.accepted']);
  });
});

describe('a refusal', () => {
  it('keeps the SHA-256 of the text it refused, never the text', () => {
    const { events } = given(IDLE).when(chat('b', { subject: 'bob', messages: ['my card is 4111 1111 1111 1111'] }));
    expect(events).toEqual([
      {
        type: 'input.rejected',
        data: { input: { id: 'b', kind: 'chat', digest: inputDigest('my card is 4111 1111 1111 1111') }, code: 'forbidden', message: 'bob may not write to this conversation' },
      },
    ]);
    expect(JSON.stringify(events)).not.toContain('4111');
  });
});

describe('conversation keys the Responses door derives', () => {
  const opening = (subject: string, nonce: string | undefined, key: string): InputRecord =>
    chat('create', { subject, conversation: key, ...(nonce === undefined ? {} : { derivedFrom: nonce }) });
  const aliceKey = derivedConversationKey('alice', 'order-1');

  it('are opened only by a chat of the subject and nonce that derive them', () => {
    const opened = given([]).when(opening('alice', 'order-1', aliceKey)).thenTypes('conversation.opened', 'input.accepted');
    expect(opened.state.owner).toBe('alice');
    // Another subject computing alice's key cannot open it: not by a plain chat, nor by claiming her nonce.
    for (const [subject, nonce] of [['bob', undefined], ['bob', 'order-1']] as const) {
      given([]).when(opening(subject, nonce, aliceKey)).thenRefused('forbidden');
    }
    given([]).when({ ...base, type: 'steer', id: 's', text: 's', conversation: aliceKey, subject: 'bob' }).thenRefused('forbidden');
  });

  it('a refusal says why: a key not derived for the subject, or a plain chat where only the door opens one', () => {
    const refusal = (decided: { events: DomainEvent[] }) => (decided.events[0]?.type === 'input.rejected' ? decided.events[0].data.message : undefined);
    expect(refusal(given([]).when(opening('bob', 'order-1', aliceKey)))).toBe(`${aliceKey} is not the conversation key derived for bob`);
    expect(refusal(given([]).when(opening('bob', undefined, aliceKey)))).toBe(
      'conversations under responses/ are opened by the Responses door only, each for the subject it derives the key for',
    );
  });

  it('once opened, its owner writes to it as to any other: a plain chat and a steer, without the nonce', () => {
    const opened = given([]).and(opening('alice', 'order-1', aliceKey));
    opened.when(chat('next', { conversation: aliceKey })).thenTypes('input.accepted');
    opened.when({ ...base, type: 'steer', id: 's', text: 's', conversation: aliceKey }).thenTypes('input.accepted', 'steer.accepted');
  });

  it('a create meant to open one never joins a conversation another subject opened, even with write granted', () => {
    const bobs = given([
      { type: 'conversation.opened', data: { owner: 'bob', agent: 'default' } },
      { type: 'access.granted', data: { grant: 'g', subject: 'alice', access: 'write' } },
    ]);
    bobs.when(opening('alice', 'order-1', aliceKey)).then([
      expect.objectContaining({ type: 'input.rejected', data: expect.objectContaining({ code: 'forbidden', message: expect.stringContaining('opened by another subject') }) }),
    ]);
    // Alice's own retry of it is accepted.
    given([{ type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } }]).when(opening('alice', 'order-1', aliceKey)).thenTypes('input.accepted');
  });

  it("a key is derived from the subject and the nonce: a retry's Idempotency-Key finds it again, another subject's does not", () => {
    expect(derivedConversationKey('alice', 'k1')).toBe(derivedConversationKey('alice', 'k1'));
    expect(derivedConversationKey('alice', 'k1')).not.toBe(derivedConversationKey('bob', 'k1'));
    expect(derivedConversationKey('alice', 'k1')).toMatch(/^responses\/[0-9a-f]{40}$/);
  });

  it('keys outside the prefix are opened by anyone, as before', () => {
    given([]).when(opening('bob', undefined, 'trip/1')).thenTypes('conversation.opened', 'input.accepted');
  });
});

describe('the agent that answers, and its input guard', () => {
  const agents: Agents = { defaultAgent: 'default', policyOf: (name) => (name === 'default' || name === 'specialist' ? policy : undefined) };
  const decide = (events: readonly DomainEvent[], inputs: InputRecord[], guard: (input: InputRecord) => GuardOutcome | undefined = () => undefined) =>
    decideInputs(events.reduce(evolve, initialState()), inputs, new Set(events.map(onceKey)), agents, new Date(sentAt), guard);
  const refusal = (events: DomainEvent[]) => events.map((e) => (e.type === 'input.rejected' ? { code: e.data.code, message: e.data.message } : e.type));

  it('the first input opens the conversation for the agent it names, or the default one; an agent not run here is refused, naming it', () => {
    expect(decide([], [chat('a', { agent: 'specialist' })])[0]).toEqual({ type: 'conversation.opened', data: { owner: 'alice', agent: 'specialist' } });
    expect(decide([], [chat('a')])[0]).toEqual({ type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } });
    const [unknown] = refusal(decide([], [chat('a', { agent: 'nobody' })]));
    expect(unknown).toMatchObject({ code: 'unknown_agent', message: expect.stringContaining('nobody') });
  });

  it('a chat naming another agent than the one answering is agent_mismatch, naming the one that answers; naming it, or none, is accepted', () => {
    const [mismatch] = refusal(decide(IDLE, [chat('a', { agent: 'specialist' })]));
    expect(mismatch).toMatchObject({ code: 'agent_mismatch', message: expect.stringContaining('default') });
    expect(types(decide(IDLE, [chat('a', { agent: 'default' }), chat('b')]))).toEqual(['input.accepted', 'input.accepted']);
    const opened = [{ type: 'conversation.opened', data: { owner: 'alice', agent: 'specialist' } } as DomainEvent];
    expect(types(decide(opened, [chat('a', { agent: 'specialist' })]))).toEqual(['input.accepted']);
  });

  it('what the guard refused is refused with its message; a guard that failed decides nothing, says which try failed, and the same id is decided again', () => {
    const refused = decide(IDLE, [chat('a'), steer('s')], (input) => ({ refuse: `no ${input.id}` }));
    expect(refusal(refused)).toEqual([
      { code: 'refused', message: 'no a' },
      { code: 'refused', message: 'no s' },
    ]);
    const failed = decide(IDLE, [chat('a'), steer('s')], (input) => ({ failed: 'timed out', attempt: `try-${input.id}` }));
    expect(failed).toEqual([
      { type: 'guard.failed', data: { input: { id: 'a', kind: 'chat' }, attempt: 'try-a', message: 'timed out' } },
      { type: 'guard.failed', data: { input: { id: 's', kind: 'steer' }, attempt: 'try-s', message: 'timed out' } },
    ]);
    expect(types(decide([...IDLE, ...failed], [chat('a')]))).toEqual(['input.accepted']);
  });

  it('a guard failure of one kind is no answer to an input of the other kind under its id', () => {
    const failed: DomainEvent = { type: 'guard.failed', data: { input: { id: 'x', kind: 'steer' }, attempt: 'a', message: 'timed out' } };
    expect(receiptOf(steer('x'), failed, true)).toEqual({ guardFailed: 'timed out' });
    expect(receiptOf(chat('x'), failed, true)).toEqual({ reused: true });
  });

  it('a failed precondition names the last accepted input, or none, and the one asked for', () => {
    const [none] = refusal(decide(IDLE, [chat('c', { ifLastInputId: 'b' })]));
    expect(none).toMatchObject({ code: 'precondition_failed', message: expect.stringMatching(/\bnone\b.*\bb\b/) });
    const [other] = refusal(given(IDLE).and(chat('a')).when(chat('c', { ifLastInputId: 'b' })).events);
    expect(other).toMatchObject({ code: 'precondition_failed', message: expect.stringMatching(/\ba\b.*\bb\b/) });
  });
});
