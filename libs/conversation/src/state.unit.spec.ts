import { describe, expect, it } from 'vitest';
import type { InputRecord } from '@rudder/contracts';
import { base, chat, deciderSpec, RUNNING, steer, stop } from './testing/decider-spec';
import { evolve, joinRules } from './event-rules';
import { guardedOf } from './inputs';
import { dueOf, hasOpenWork, initialState, mayAccess, parked, parseState, type Awaiting, type ConversationState, type PendingInput } from './state';

const waiting = (id: string): PendingInput => ({ id, kind: 'chat', text: id, messages: [id], subject: 'alice', seq: 1 });
const awaiting = (callId: string, expiresAt: string | null): Awaiting => ({ approval: `a-${callId}`, turn: 't1', step: 0, callId, tool: 'send', arguments: '{}', requestedAt: '2026-01-01T00:00:00.000Z', expiresAt });
const state = (over: Partial<ConversationState>): ConversationState => ({ ...initialState(), ...over });

describe('a state as stored', () => {
  it('none stored is a new conversation’s', () => {
    expect(parseState(null)).toEqual(initialState());
  });

  it('a row written by older code takes the initial value of each field it lacks: no call open, nothing waiting for approval, no hold', () => {
    const older = { owner: 'alice', runningTurn: 't1', accepted: 3 } as Partial<ConversationState>;
    const parsed = parseState(older);
    expect(parsed).toMatchObject({ owner: 'alice', runningTurn: 't1', accepted: 3, openCalls: [], awaiting: [], endedTurns: [], heldUntil: null });
    expect(hasOpenWork(parsed)).toBe(true);
  });

  it('inputs stored before messages and subjects were recorded are their text alone, from an anonymous subject; those that have them keep them', () => {
    const old = (id: string) => ({ id, kind: 'chat', text: id, seq: 1 }) as PendingInput;
    const parsed = parseState({ queue: [old('q'), waiting('w')], steers: [old('s')] });
    expect(parsed.queue).toEqual([{ ...old('q'), messages: ['q'], subject: 'anonymous' }, waiting('w')]);
    expect(parsed.steers).toEqual([{ ...old('s'), messages: ['s'], subject: 'anonymous' }]);
  });
});

describe('when a conversation is next due', () => {
  it('the earliest approval timeout, whatever order they were asked in; one with no timeout never', () => {
    const early = '2026-01-01T00:01:00.000Z';
    const late = '2026-01-01T00:02:00.000Z';
    expect(dueOf(state({ runningTurn: 't1', awaiting: [awaiting('c1', early), awaiting('c2', late)] }))).toBe(early);
    expect(dueOf(state({ runningTurn: 't1', awaiting: [awaiting('c1', late), awaiting('c2', early)] }))).toBe(early);
    expect(dueOf(state({ runningTurn: 't1', awaiting: [awaiting('c1', late), awaiting('c2', null)] }))).toBe(late);
    expect(dueOf(state({ runningTurn: 't1', awaiting: [awaiting('c2', null), awaiting('c1', late)] }))).toBe(late);
    expect(dueOf(state({ runningTurn: 't1', awaiting: [awaiting('c2', null)] }))).toBeNull();
  });

  it('the end of the queue’s hold only while no turn runs and something waits', () => {
    const heldUntil = '2026-01-01T00:01:00.000Z';
    expect(dueOf(state({ heldUntil, queue: [waiting('a')] }))).toBe(heldUntil);
    expect(dueOf(state({ heldUntil, queue: [] }))).toBeNull();
    expect(dueOf(state({ heldUntil, queue: [waiting('a')], runningTurn: 't1' }))).toBeNull();
  });
});

describe('what is left to do', () => {
  it('a running turn is parked only when every call of its last reply waits for approval and nothing asked it to end', () => {
    const all = { runningTurn: 't1', openCalls: ['c1'], awaiting: [awaiting('c1', null)] };
    expect(parked(state(all))).toBe(true);
    expect(parked(state({ ...all, runningTurn: null }))).toBe(false);
    expect(parked(state({ ...all, ending: 'stop' }))).toBe(false);
    // Between replies (its model request) no call is open: it runs.
    expect(parked(state({ ...all, openCalls: [], awaiting: [] }))).toBe(false);
  });

  it('work is a turn running that is not parked, or, none running, an input waiting', () => {
    expect(hasOpenWork(state({ runningTurn: 't1' }))).toBe(true);
    expect(hasOpenWork(state({ runningTurn: 't1', openCalls: ['c1'], awaiting: [awaiting('c1', null)] }))).toBe(false);
    expect(hasOpenWork(state({ queue: [waiting('a')] }))).toBe(true);
    expect(hasOpenWork(state({}))).toBe(false);
  });
});

describe('who may do what', () => {
  it('a conversation nobody opened is open to its first writer and readable by nobody; the owner reads and writes', () => {
    expect(mayAccess(state({}), 'bob', 'write')).toBe(true);
    expect(mayAccess(state({}), 'bob', 'read')).toBe(false);
    expect(mayAccess(state({ owner: 'alice' }), 'alice', 'read')).toBe(true);
    expect(mayAccess(state({ owner: 'alice' }), 'alice', 'write')).toBe(true);
    expect(mayAccess(state({ owner: 'alice' }), 'bob', 'read')).toBe(false);
  });
});

describe('what the input guard checks', () => {
  it('a chat’s or a steer’s text; a control is not guarded', () => {
    const opened = evolve(initialState(), { type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } });
    expect(guardedOf(opened, chat('c', { messages: ['one', 'two'] }))).toMatchObject({ kind: 'chat', text: 'one\n\ntwo' });
    expect(guardedOf(opened, stop('x'))).toBeNull();
    expect(guardedOf(opened, steer('s'))).toEqual({ kind: 'steer', text: 's' });
  });

  it('an edit’s new text, as a message of the kind of the input it edits (a chat’s when it waits no more)', () => {
    // A follow-up c waits, and a steer s waits for the running turn.
    const waitingBoth = deciderSpec().given(RUNNING).and(chat('c'), steer('s')).state;
    const edit = (target: string, to: { text: string } | { messages: string[] }): InputRecord => ({ ...base, type: 'edit', id: 'e', target, to });
    expect(guardedOf(waitingBoth, edit('s', { text: 'new' }))).toEqual({ kind: 'steer', text: 'new' });
    expect(guardedOf(waitingBoth, edit('c', { messages: ['one', 'two'] }))).toEqual({ kind: 'chat', text: 'one\n\ntwo' });
    expect(guardedOf(waitingBoth, edit('gone', { text: 'new' }))).toEqual({ kind: 'chat', text: 'new' });
  });
});

describe('the fold', () => {
  it('refuses an event it has no rule for', () => {
    expect(() => evolve(initialState(), { type: 'no.such', data: {} } as never)).toThrow(/unknown event/);
  });

  it('joins the rules of each part, and refuses a type two parts give rules for', () => {
    const rules = { evolve: (state: ConversationState) => state, onceKey: () => 'k' };
    expect(Object.keys(joinRules([{ 'stop.refused': rules }, { 'grant.refused': rules }]))).toEqual(['stop.refused', 'grant.refused']);
    expect(() => joinRules([{ 'stop.refused': rules }, { 'stop.refused': rules }])).toThrow(new Error('the event type stop.refused has two rules'));
  });
});
