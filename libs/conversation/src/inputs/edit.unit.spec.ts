import { describe, expect, it } from 'vitest';
import { inputDigest, type DomainEvent, type InputRecord } from '@rudder/contracts';
import { evolveTurn, startTurn } from '@rudder/agent/turn';
import { decideInputs } from '../decide';
import { onceKey } from '../event-rules';
import { receiptKeys, receiptOf } from '../receipts';
import { agentsWith, base, chat, deciderSpec, IDLE, policy, retract, RUNNING, sentAt, steer, stop } from '../testing/decider-spec';

const { given } = deciderSpec();

/** An edit `id` of input `target` to `text` (a string) or `messages` (an array). */
const edit = (id: string, target: string, to: string | string[], extra: { ifRevision?: number; subject?: string } = {}): InputRecord => ({
  ...base,
  type: 'edit',
  id,
  target,
  to: typeof to === 'string' ? { text: to } : { messages: to },
  ...extra,
});
const edited = (editId: string, id: string, kind: 'chat' | 'steer', messages: string[], revision: number): DomainEvent => ({
  type: 'input.edited',
  data: { edit: editId, input: { id, kind, text: messages.join('\n\n'), messages }, revision },
});
/** Every pending input as [id, kind, text, revision]. */
const waiting = (state: { steers: { id: string; kind: string; text: string; revision?: number }[]; queue: { id: string; kind: string; text: string; revision?: number }[] }) =>
  [...state.steers, ...state.queue].map((p) => [p.id, p.kind, p.text, p.revision ?? 0]);

describe('an edit under the conversation lock', () => {
  it('gives a pending follow-up new text in its kind and place, its revision one more each time (0 as sent)', () => {
    const head = given(RUNNING).and(chat('a'), chat('b'), chat('c'));
    const once = head.when(edit('e1', 'b', 'book the night train')).then([edited('e1', 'b', 'chat', ['book the night train'], 1)]);
    expect(waiting(once.state)).toEqual([
      ['a', 'chat', 'a', 0],
      ['b', 'chat', 'book the night train', 1],
      ['c', 'chat', 'c', 0],
    ]);
    const twice = once.after.when(edit('e2', 'b', ['the night train', 'with a sleeper'])).then([edited('e2', 'b', 'chat', ['the night train', 'with a sleeper'], 2)]);
    expect(twice.state.queue[1]).toMatchObject({ id: 'b', kind: 'chat', messages: ['the night train', 'with a sleeper'], revision: 2 });
  });

  it('the turn an edited follow-up starts has only its latest text as its prompt', () => {
    const started = given(IDLE).and(chat('a')).andTurnStarts('t1').and(chat('b'), edit('e1', 'b', 'the latest'))
      .andStored({ type: 'turn.ended', data: { turn: 't1', status: 'completed', outcome: null, content: 'ok', steered: [] } })
      .whenTurnStarts('t2');
    expect(started.events[0]).toEqual({ type: 'turn.started', data: { turn: 't2', prompt: { id: 'b', text: 'the latest' } } });
  });

  it('gives a steer the running turn has not taken new text, and the step that takes it takes only that', () => {
    const head = given(RUNNING).and(steer('s1'));
    const decided = head.when(edit('e1', 's1', 'in metres, please')).then([edited('e1', 's1', 'steer', ['in metres, please'], 1)]);
    expect(decided.state.steers.map((s) => [s.id, s.text, s.revision])).toEqual([['s1', 'in metres, please', 1]]);
    const prompt = { id: 'p0', text: 'p0', messages: ['p0'], subject: 'alice' };
    const replied = evolveTurn(startTurn('t1', prompt), { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [{ id: 'c1', name: 'wait', arguments: '{}' }] } });
    const result: DomainEvent = { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'c1', name: 'wait', result: 'ok', isError: false } };
    const taken = decided.after.whenCommitting(replied, [result]);
    expect(taken.events.filter((e) => e.type === 'steer.taken')).toEqual([{ type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 'in metres, please' } } }]);
  });

  it('a steer that waits as a turn of its own (it did not land) is edited in the queue', () => {
    given(IDLE).and(steer('s1')).when(edit('e1', 's1', 'shorter')).then([edited('e1', 's1', 'steer', ['shorter'], 1)]);
  });

  it('refuses what is not pending — the running turn’s prompt, a steer the turn took, a retracted input, an unknown id — and changes nothing', () => {
    const head = given(RUNNING).and(chat('gone'), retract('r', { id: 'gone' }));
    head.when(edit('e1', 'p0', 'too late')).thenRefused('not_found');
    head.when(edit('e2', 'gone', 'too late')).thenRefused('not_found');
    head.when(edit('e3', 'nobody', 'x')).thenRefused('not_found');
    const took = given(RUNNING).and(steer('s1')).andStored(
      { type: 'steer.taken', data: { turn: 't1', step: 1, input: { id: 's1', text: 's1' } } },
      { type: 'input.delivered', data: { input: { id: 's1', kind: 'steer' }, turn: 't1' } },
    );
    const refused = took.when(edit('e4', 's1', 'too late')).thenRefused('not_found');
    expect(refused.state).toEqual(took.state);
  });

  it('refuses a subject that may not write', () => {
    given(RUNNING).and(chat('a')).when(edit('e1', 'a', 'x', { subject: 'mallory' })).thenRefused('forbidden');
  });

  it('ifRevision: refused unless the input is at that revision, the refusal saying which it is', () => {
    const head = given(RUNNING).and(chat('a'), edit('e1', 'a', 'one'));
    head.when(edit('e2', 'a', 'two', { ifRevision: 1 })).thenTypes('input.edited');
    const stale = head.when(edit('e3', 'a', 'two', { ifRevision: 0 })).thenRefused('precondition_failed');
    expect(stale.events[0]).toMatchObject({ data: { revision: 1, message: 'input a is at revision 1, not 0' } });
  });

  it('a steer edited among several landed counts against the steering bound, not the follow-ups’', () => {
    const bounded = deciderSpec(agentsWith({ maxTaken: 16, bounds: { steers: 2, chats: 1, chars: 8000 } }));
    const head = bounded.given(RUNNING).and(steer('s1'), steer('s2'), chat('c'));
    expect(head.state.steers.map((p) => p.id)).toEqual(['s1', 's2']);
    head.when(edit('e1', 's1', 'use Celsius')).then([edited('e1', 's1', 'steer', ['use Celsius'], 1)]);
  });

  it('the new text keeps the input’s shape: messages only for a chat, text for a steer or a chat of one message', () => {
    const head = given(RUNNING).and(chat('one'), chat('many', { messages: ['x', 'y'] }), steer('s'));
    head.when(edit('e1', 's', ['a', 'b'])).thenRefused('shape');
    head.when(edit('e2', 'many', 'just one')).thenRefused('shape');
    head.when(edit('e3', 'many', ['a', 'b', 'c'])).then([edited('e3', 'many', 'chat', ['a', 'b', 'c'], 1)]);
    head.when(edit('e5', 'many', ['a', 'b'])).then([edited('e5', 'many', 'chat', ['a', 'b'], 1)]);
    head.when(edit('e4', 'one', ['now', 'two'])).then([edited('e4', 'one', 'chat', ['now', 'two'], 1)]);
  });

  it('the new text counts against the characters bound as if the input were sent anew in its place; a full queue still takes an edit', () => {
    const small = deciderSpec(agentsWith({ maxTaken: 16, bounds: { steers: 1, chats: 2, chars: 10 } }));
    const head = small.given(RUNNING).and(chat('a', { messages: ['12345'] }), chat('b', { messages: ['123'] }));
    head.when(edit('e1', 'a', '1234567')).thenTypes('input.edited'); // 7 + 3 = 10
    const over = head.when(edit('e2', 'a', '12345678')).thenRefused('queue_full'); // 8 + 3 = 11
    expect(over.state.queue.map((q) => q.text)).toEqual(['12345', '123']);
    const steering = small.given(RUNNING).and(steer('s', { text: '12' }));
    steering.when(edit('e3', 's', '1234567890')).thenTypes('input.edited');
    steering.when(edit('e4', 's', '12345678901')).thenRefused('queue_full');
  });

  it('a steer that landed is bounded as steering, a follow-up as the follow-up queue: each with the other queue full', () => {
    const small = deciderSpec(agentsWith({ maxTaken: 16, bounds: { steers: 1, chats: 2, chars: 100 } }));
    const full = small.given(RUNNING).and(steer('s'), chat('a'), chat('b'));
    expect(full.state.steers.map((p) => p.id)).toEqual(['s']);
    full.when(edit('e1', 's', 'new steer')).thenTypes('input.edited');
    full.when(edit('e2', 'a', 'new follow-up')).thenTypes('input.edited');
  });

  it('the bounds are those of the agent that answers now (after a handoff, the one it chose)', () => {
    const agents = { defaultAgent: 'default', policyOf: (name: string) => (name === 'default' ? policy : name === 'specialist' ? { ...policy, bounds: { ...policy.bounds, chars: 10 } } : undefined) };
    const head = deciderSpec(agents).given(RUNNING).and(chat('a'));
    head.when(edit('e1', 'a', 'a longer text than ten')).thenTypes('input.edited');
    head.andStored({ type: 'agent.changed', data: { from: 'default', to: 'specialist', turn: 't1', step: 0 } }).when(edit('e1', 'a', 'a longer text than ten')).thenRefused('queue_full');
  });

  it('its refusals name the input; a revision only where the input was found, in the event and the receipt', () => {
    const head = given(RUNNING).and(chat('a'), chat('many', { messages: ['x', 'y'] }), steer('s'));
    const data = (input: InputRecord) => head.when(input).events[0].data as Record<string, unknown>;
    const digest = (text: string) => inputDigest(text);
    const notFound = data(edit('e1', 'nobody', 'x'));
    expect(notFound).toStrictEqual({ edit: 'e1', target: 'nobody', code: 'not_found', message: expect.stringContaining('nobody'), digest: digest('x') });
    expect(data(edit('e2', 'a', 'x', { ifRevision: 3 }))).toStrictEqual({ edit: 'e2', target: 'a', code: 'precondition_failed', message: expect.stringMatching(/a.*0.*3/), digest: digest('x'), revision: 0 });
    expect(data(edit('e3', 's', ['p', 'q']))).toMatchObject({ code: 'shape', message: expect.stringContaining('s is a steer') });
    expect(data(edit('e4', 'many', 'one'))).toMatchObject({ code: 'shape', message: expect.stringMatching(/many.*2 messages/) });
    const [refused] = head.when(edit('e1', 'nobody', 'x')).events;
    expect(receiptOf(edit('e1', 'nobody', 'x'), refused)).toEqual({ refusal: { code: 'not_found', message: notFound.message, revision: undefined } });
    expect(receiptOf(edit('e1', 'other', 'x'), refused)).toEqual({ reused: true });
  });

  it("the agent's guard checks the new text: refused, nothing changes; a failed guard decides nothing, and the same edit is decided when sent again", () => {
    const head = given(RUNNING).and(chat('a'));
    const agents = agentsWith({ maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } });
    const refused = decideInputs(head.state, [edit('e1', 'a', 'rude')], new Set(), agents, new Date(sentAt), () => ({ refuse: 'no rudeness' }));
    expect(refused).toEqual([{ type: 'edit.refused', data: { edit: 'e1', target: 'a', code: 'refused', message: 'no rudeness', digest: inputDigest('rude'), revision: 0 } }]);
    const failed = decideInputs(head.state, [edit('e2', 'a', 'kind')], new Set(), agents, new Date(sentAt), () => ({ failed: 'the guard timed out', attempt: 'try-1' }));
    expect(failed).toEqual([{ type: 'guard.failed', data: { input: { id: 'e2', kind: 'chat' }, attempt: 'try-1', message: 'the guard timed out' } }]);
    expect(receiptOf(edit('e2', 'a', 'kind'), failed[0])).toEqual({ guardFailed: 'the guard timed out' });
    expect(failed.some((e) => receiptKeys(edit('e2', 'a', 'kind')).includes(onceKey(e)))).toBe(false);
    head.andStored(...failed).when(edit('e2', 'a', 'kind')).thenTypes('input.edited');
  });

  it('is decided once: its decision holds its receipt key, the same edit again adds nothing, and its receipt tells it from another edit under its id', () => {
    const head = given(RUNNING).and(chat('a'));
    for (const input of [edit('e1', 'a', 'new'), edit('e2', 'nobody', 'new')]) {
      const decided = head.when(input);
      expect(decided.events.some((e) => receiptKeys(input).includes(onceKey(e))), input.id).toBe(true);
      decided.after.when(input).thenNothing();
    }
    const [accepted] = head.when(edit('e1', 'a', 'new')).events;
    expect(receiptOf(edit('e1', 'a', 'new'), accepted)).toEqual({ answer: { id: 'a', kind: 'chat', text: 'new', revision: 1 } });
    expect(receiptOf(edit('e1', 'a', 'other'), accepted)).toEqual({ reused: true });
    expect(receiptOf(edit('e1', 'b', 'new'), accepted)).toEqual({ reused: true });
    const [refused] = head.when(edit('e3', 'nobody', 'x')).events;
    expect(receiptOf(edit('e3', 'nobody', 'x'), refused)).toMatchObject({ refusal: { code: 'not_found' } });
    expect(receiptOf(edit('e3', 'nobody', 'y'), refused)).toEqual({ reused: true });
  });

  it('nothing is deleted: the acceptance stays in the log, and what takes the input back or drops it later names its latest text', () => {
    const head = given(RUNNING).and(chat('a'), edit('e1', 'a', 'newer'));
    expect(head.events.filter((e) => e.type === 'input.accepted').map((e) => e.data.input.text)).toEqual(['p0', 'a']);
    head.when(retract('r', { id: 'a' })).then([{ type: 'input.retracted', data: { input: { id: 'a', kind: 'chat', text: 'newer' }, retract: 'r' } }]);
    expect(head.when(stop('x', { discardPending: true })).events[1]).toEqual({ type: 'input.discarded', data: { input: { id: 'a', kind: 'chat', text: 'newer' }, stop: 'x' } });
  });
});
