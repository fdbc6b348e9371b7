import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { countMessage, messageTokens } from '@rudder/agent';
import { emptyConversation, evolveConversation, fromSnapshot, recentHistory, type Conversation, type HistoryTurn } from './conversation';

/** Folds events in log order, as the turn runner does. */
const fold = (events: DomainEvent[], from: Conversation = emptyConversation()) => events.reduce(evolveConversation, from);
const log = (events: DomainEvent[], _from = 1) => events;

const accepted = (id: string, ...messages: string[]): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: messages.join('\n\n'), messages, subject: 'alice', sentAt: '2026-11-30T00:00:00.000Z' } },
});
const steer = (id: string, text: string, turn: string | null): DomainEvent[] => [
  { type: 'input.accepted', data: { input: { id, kind: 'steer', text, messages: [text], subject: 'alice', sentAt: '2026-11-30T00:00:00.000Z' } } },
  { type: 'steer.accepted', data: { input: { id, text }, turn, landed: turn !== null } },
];
const taken = (turn: string, step: number, id: string, text: string): DomainEvent => ({ type: 'steer.taken', data: { turn, step, input: { id, text } } });
const started = (turn: string, id: string, text: string): DomainEvent => ({ type: 'turn.started', data: { turn, prompt: { id, text } } });
const replied = (turn: string, step: number, content: string, toolCalls: { id: string; name: string; arguments: string }[] = []): DomainEvent => ({
  type: 'model.replied',
  data: { turn, step, content, toolCalls },
});
const toolEnded = (turn: string, step: number, callId: string, result: string): DomainEvent => ({
  type: 'tool.ended',
  data: { turn, step, callId, name: 'wait', result, isError: false },
});
const ended = (turn: string, content: string, status: 'completed' | 'stopped' = 'completed'): DomainEvent => ({
  type: 'turn.ended',
  data: { turn, status, outcome: null, content, steered: [] },
});
const call = { id: 'c1', name: 'wait', arguments: '{"ms":5}' };
/** A turn `t1` of two prompt messages whose tool call was steered: it took `use Celsius` at its second step. */
const steeredTurn = (): DomainEvent[] => [
  accepted('a', 'one', 'two'),
  started('t1', 'a', 'one\n\ntwo'),
  replied('t1', 0, 'let me wait', [call]),
  ...steer('s', 'use Celsius', 't1'),
  toolEnded('t1', 0, 'c1', 'waited 5 ms'),
  taken('t1', 1, 's', 'use Celsius'),
  replied('t1', 1, 'done, in Celsius'),
  ended('t1', 'let me wait\n\ndone, in Celsius'),
];

describe('the conversation fold', () => {
  it('keeps what waits, with its messages, until a turn starts for it', () => {
    const state = fold(log([accepted('a', 'first'), accepted('b', 'one', 'two'), started('t1', 'a', 'first')]));
    // b was accepted behind a: its turn will start from the queue (a tool's `queued`); a's did not.
    expect(state.state.queue).toEqual([{ id: 'b', kind: 'chat', text: 'one\n\ntwo', messages: ['one', 'two'], subject: 'alice', seq: 2, queued: true }]);
    expect(state.running?.prompt).toEqual({ id: 'a', text: 'first', messages: ['first'], subject: 'alice', queued: false });
    expect(state.running?.messages).toEqual([{ role: 'user', content: 'first' }]);
  });

  it('a retracted or discarded input no longer waits', () => {
    const state = fold(
      log([
        accepted('a', 'first'),
        accepted('b', 'second'),
        { type: 'input.retracted', data: { input: { id: 'a', kind: 'chat', text: 'first' }, retract: 'r' } },
        { type: 'input.discarded', data: { input: { id: 'b', kind: 'chat', text: 'second' }, stop: 's' } },
      ]),
    );
    expect(state.state.queue).toEqual([]);
  });

  it('a rolled-back turn leaves no trace in what later turns see; an interrupted one keeps what it did', () => {
    const rolledBack = fold(
      log([
        accepted('a', 'first'),
        started('t1', 'a', 'first'),
        replied('t1', 0, 'half done'),
        { type: 'stop.requested', data: { stop: 'b', turn: 't1', mode: 'rollback' } },
        ended('t1', 'half done', 'stopped'),
      ]),
    );
    expect(rolledBack.history).toEqual([]);
    const interrupted = fold(
      log([
        accepted('a', 'first'),
        started('t1', 'a', 'first'),
        replied('t1', 0, 'half done'),
        { type: 'stop.requested', data: { stop: 'b', turn: 't1', mode: 'interrupt' } },
        ended('t1', 'half done', 'stopped'),
      ]),
    );
    expect(interrupted.history.map((t) => t.messages)).toEqual([
      [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'half done' },
      ],
    ]);
  });

  it('a stored reply with tool calls leaves those calls open until their results are stored', () => {
    const state = fold(log([accepted('a', 'wait please'), started('t1', 'a', 'wait please'), replied('t1', 0, 'waiting', [call])]));
    expect(state.running?.openCalls).toEqual([call]);
    expect(state.running?.steps).toBe(1);
    const after = fold(log([toolEnded('t1', 0, 'c1', 'waited 5 ms')], 4), state);
    expect(after.running?.openCalls).toEqual([]);
    expect(after.running?.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'waited 5 ms' });
  });

  it('later turns see an earlier turn as its prompt, the messages steered to it, then its answers', () => {
    const state = fold(log(steeredTurn()));
    expect(state.running).toBeNull();
    expect(state.history.map((t) => t.messages)).toEqual([
      [
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
        { role: 'user', content: 'use Celsius' },
        { role: 'assistant', content: 'let me wait' },
        { role: 'assistant', content: 'done, in Celsius' },
      ],
    ]);
  });

  it('a steered message sits in the running turn after the tool results, as a user message', () => {
    const state = fold(
      log([
        accepted('a', 'weather?'),
        started('t1', 'a', 'weather?'),
        replied('t1', 0, '', [call]),
        ...steer('s', 'use Celsius', 't1'),
        toolEnded('t1', 0, 'c1', 'waited 5 ms'),
        taken('t1', 1, 's', 'use Celsius'),
      ]),
    );
    expect(state.running?.messages.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'waited 5 ms' },
      { role: 'user', content: 'use Celsius' },
    ]);
    expect(state.running?.steered).toEqual([{ id: 's', text: 'use Celsius' }]);
    expect(state.state.steers).toEqual([]);
  });

  it('a steer that did not land waits in the queue, in order with the chats', () => {
    const state = fold(log([accepted('a', 'first'), started('t1', 'a', 'first'), accepted('b', 'chat'), ...steer('s', 'steer', null)]));
    expect(state.state.queue.map((p) => p.id)).toEqual(['b', 's']);
  });

  it("a stopped turn's untaken steers are queued as turns of their own, in the order they were sent", () => {
    const state = fold(
      log([
        accepted('a', 'first'),
        started('t1', 'a', 'first'),
        ...steer('s1', 'one', 't1'),
        accepted('b', 'chat'),
        ...steer('s2', 'two', 't1'),
        ended('t1', '', 'stopped'),
      ]),
    );
    expect(state.state.queue.map((p) => p.id)).toEqual(['s1', 'b', 's2']);
  });

  it('folding the log gives one answer: a rollback stored before the turn ended drops the turn from history', () => {
    // The worker decides the end of a turn asked to roll back as stopped (decideTurnCommit); even
    // a log where it says completed folds the same way every time: the request came first.
    const events = log([
      accepted('a', 'first'),
      started('t1', 'a', 'first'),
      { type: 'stop.requested', data: { stop: 'b', turn: 't1', mode: 'rollback' } },
      replied('t1', 0, 'done anyway'),
      ended('t1', 'done anyway'),
    ]);
    const whole = fold(events);
    const resumed = fold(events.slice(3), fold(events.slice(0, 3)));
    expect(whole.history).toEqual([]);
    expect(resumed).toEqual(whole);
  });
});

describe('what a model request carries of the earlier turns (recentHistory)', () => {
  /**
   * `n` turns, each a one-message prompt `chat <i>` answered `answer <i>`; the turn `rollBack`, when given, rolled back;
   * folded keeping `kept` earlier turns (null: every one).
   */
  const turns = (n: number, rollBack?: number, kept: number | null = null) =>
    fold(
      Array.from({ length: n }, (_, i): DomainEvent[] => [
        accepted(`a${i}`, `chat ${i}`),
        started(`t${i}`, `a${i}`, `chat ${i}`),
        ...(i === rollBack ? [{ type: 'stop.requested', data: { stop: `s${i}`, turn: `t${i}`, mode: 'rollback' } } as DomainEvent] : []),
        replied(`t${i}`, 0, `answer ${i}`),
        ended(`t${i}`, `answer ${i}`, i === rollBack ? 'stopped' : 'completed'),
      ]).flat(),
      emptyConversation(kept),
    );
  const contents = (turns: HistoryTurn[]) => turns.flatMap((t) => t.messages).map((m) => m.content);

  it('the last `turns` earlier turns, whole and oldest first; all of them when fewer; none for 0', () => {
    const five = turns(5);
    expect(contents(recentHistory(five, 2))).toEqual(['chat 3', 'answer 3', 'chat 4', 'answer 4']);
    expect(contents(recentHistory(five, 100))).toEqual(['chat 0', 'answer 0', 'chat 1', 'answer 1', 'chat 2', 'answer 2', 'chat 3', 'answer 3', 'chat 4', 'answer 4']);
    expect(recentHistory(five, 0)).toEqual([]);
  });

  it('a turn is never cut: its prompt, the messages steered to it and its answers come together', () => {
    const state = fold([
      ...steeredTurn(),
      accepted('b', 'three'),
      started('t2', 'b', 'three'),
      replied('t2', 0, 'answer three'),
      ended('t2', 'answer three'),
    ]);
    expect(contents(recentHistory(state, 1))).toEqual(['three', 'answer three']);
    expect(contents(recentHistory(state, 2))).toEqual(['one', 'two', 'use Celsius', 'let me wait', 'done, in Celsius', 'three', 'answer three']);
  });

  it('a rolled-back turn is not one of them: the window counts the turns later turns see', () => {
    expect(contents(recentHistory(turns(4, 2), 2))).toEqual(['chat 1', 'answer 1', 'chat 3', 'answer 3']);
  });
});

describe('a fold keeps the earlier turns its worker needs (historyKept)', () => {
  const history = (n: number, kept: number | null) =>
    fold(
      Array.from({ length: n }, (_, i): DomainEvent[] => [
        accepted(`a${i}`, `chat ${i}`),
        started(`t${i}`, `a${i}`, `chat ${i}`),
        replied(`t${i}`, 0, `answer ${i}`),
        ended(`t${i}`, `answer ${i}`),
      ]).flat(),
      emptyConversation(kept),
    );
  const prompts = (conversation: Conversation) => conversation.history.map((turn) => turn.messages[0].content);

  it('keeps the last `historyKept` turns, so a window up to it carries what an unbounded fold would', () => {
    const bounded = history(7, 3);
    const unbounded = history(7, null);
    expect(prompts(bounded)).toEqual(['chat 4', 'chat 5', 'chat 6']);
    expect(unbounded.history).toHaveLength(7);
    for (const window of [0, 1, 2, 3]) expect(recentHistory(bounded, window)).toEqual(recentHistory(unbounded, window));
    expect(bounded.state).toEqual(unbounded.state); // only the history is bounded
    expect(history(4, 0).history).toEqual([]);
    expect(prompts(history(2, 3))).toEqual(['chat 0', 'chat 1']);
  });

  it('a snapshot kept with fewer turns than wanted is not used once it may have dropped some; one with more is cut down', () => {
    const snapshot = (n: number, kept: number | null) => JSON.parse(JSON.stringify(history(n, kept))) as Conversation;
    // Folded keeping 2, and it had 2 or more: turns before them may be gone.
    expect(fromSnapshot(snapshot(5, 2), 3)).toBeNull();
    expect(fromSnapshot(snapshot(2, 2), 3)).toBeNull();
    expect(fromSnapshot(snapshot(5, 2), null)).toBeNull();
    // Fewer turns than it kept: none was dropped, whatever is wanted now.
    expect(fromSnapshot(snapshot(1, 2), 5)).toEqual({ ...history(1, 5), historyKept: 5 });
    expect(fromSnapshot(snapshot(1, 2), null)).toEqual(history(1, null));
    // Kept as many or more: cut down to what is wanted, as a fold keeping that many would be.
    expect(fromSnapshot(snapshot(5, 2), 2)).toEqual(history(5, 2));
    expect(fromSnapshot(snapshot(5, null), 2)).toEqual(history(5, 2));
    expect(fromSnapshot(snapshot(5, 4), 0)).toEqual(history(5, 0));
  });
});

describe('compaction in the fold (history.compacted)', () => {
  /** Folds events as the worker reads the log: each with its position, 1 on. */
  const foldAt = (events: DomainEvent[], from = emptyConversation()) => events.reduce((c, e, i) => evolveConversation(c, { ...e, position: i + 1 }), from);
  const turnsOf = (n: number) =>
    Array.from({ length: n }, (_, i): DomainEvent[] => [accepted(`a${i}`, `chat ${i}`), started(`t${i}`, `a${i}`, `chat ${i}`), replied(`t${i}`, 0, `answer ${i}`), ended(`t${i}`, `answer ${i}`)]).flat();
  const compacted = (through: string, position: number, turns: number): DomainEvent => ({
    type: 'history.compacted',
    data: { turn: 't9', step: 0, summary: `summary through ${through}`, through: { turn: through, position }, turns, tokens: 4 },
  });

  it('the summary stands in for the turns it covers: the fold lets go of them and keeps the later ones whole; the state names the last compaction', () => {
    const before = foldAt(turnsOf(4));
    expect(before.history.map((t) => [t.turn, t.end])).toEqual([['t0', 4], ['t1', 8], ['t2', 12], ['t3', 16]]);
    const after = foldAt([...turnsOf(4), compacted('t1', 8, 2)]);
    expect(after.summary).toEqual({ text: 'summary through t1', through: 't1', end: 8, turns: 2 });
    expect(after.history.map((t) => t.turn)).toEqual(['t2', 't3']);
    expect(after.history).toEqual(before.history.slice(2));
    expect(after.state.compaction).toEqual({ through: 't1', turns: 2, tokens: 4 });
    // The turns after it are added as before; a later summary replaces it.
    const later = foldAt([...turnsOf(6), compacted('t1', 8, 2), compacted('t3', 16, 4)]);
    expect(later.summary?.through).toBe('t3');
    expect(later.history.map((t) => t.turn)).toEqual(['t4', 't5']);
  });

  it('a fold that lets go of turns (historyKept) says where the last one it let go of ended, so a compaction reads those from the log', () => {
    expect(foldAt(turnsOf(5), emptyConversation(2)).letGoThrough).toBe(12);
    expect(foldAt(turnsOf(2), emptyConversation(2)).letGoThrough).toBe(0);
  });

  it('an ended turn keeps the tokens its messages were counted with as the running turn: nothing is counted again, and the sum is what a count gives', () => {
    const running = foldAt(steeredTurn().slice(0, -1)).running!;
    for (const m of running.messages) messageTokens(m); // the requests of the turn counted these
    const ended = foldAt(steeredTurn()).history[0];
    const uncounted = fold(steeredTurn()).history[0]; // a fold whose running messages were never counted: counted when first needed
    expect(uncounted.tokens).toBeUndefined();
    // Folded again from the same events: its running turn's messages are new objects, unknown to the count.
    expect(foldAt(steeredTurn()).history[0].tokens).toBeUndefined();
    expect(ended.messages.map((m) => m.content)).toEqual(['one', 'two', 'use Celsius', 'let me wait', 'done, in Celsius']);
    const folded = steeredTurn().slice(0, -1).reduce((c, e, i) => evolveConversation(c, { ...e, position: i + 1 }), emptyConversation());
    for (const m of folded.running!.messages) messageTokens(m);
    const last = steeredTurn().at(-1)!;
    const withCounts = evolveConversation(folded, { ...last, position: 99 }).history[0];
    expect(withCounts.tokens).toBe(withCounts.messages.reduce((sum, m) => sum + countMessage(m), 0));
  });
});

describe('a rollback (turns.rolledBack) in the fold', () => {
  /** `n` turns t0..t(n-1), each `chat <i>` answered `answer <i>`, at positions 1, 2, … */
  const turnsOf = (n: number): DomainEvent[] =>
    Array.from({ length: n }, (_, i): DomainEvent[] => [accepted(`a${i}`, `chat ${i}`), started(`t${i}`, `a${i}`, `chat ${i}`), replied(`t${i}`, 0, `answer ${i}`), ended(`t${i}`, `answer ${i}`)]).flat();
  const rolledBack = (turns: string[], stopped: string | null = null): DomainEvent => ({
    type: 'turns.rolledBack',
    data: { rollback: 'r', asked: { turns: turns.length }, turns, stopped },
  });
  const positioned = (events: DomainEvent[], from: Conversation = emptyConversation(), first = 1) =>
    events.reduce((c, e, i) => evolveConversation(c, { ...e, position: first + i }), from);
  const prompts = (conversation: Conversation) => conversation.history.map((turn) => turn.messages[0].content);
  /** The position of turn i's `turn.ended` in `turnsOf`. */
  const endOf = (i: number) => 4 * i + 4;

  it('leaves the rolled-back turns out of the history later requests carry, and out of what a later rollback reaches', () => {
    const folded = positioned([...turnsOf(4), rolledBack(['t2', 't3'])]);
    expect(prompts(folded)).toEqual(['chat 0', 'chat 1']);
    expect(folded.ends.map((e) => e.turn)).toEqual(['t0', 't1']);
    expect(folded.state.endedTurns.map((t) => t.turn)).toEqual(['t0', 't1']);
    expect(folded.summary).toBeNull();
    expect(folded.letGoThrough).toBe(0);
  });

  it('a summary that covered a rolled-back turn is dropped; the turns it covered before them are left to the log, for the next compaction', () => {
    const compacted: DomainEvent = { type: 'history.compacted', data: { turn: 't4', step: 0, summary: 'the first three', through: { turn: 't2', position: endOf(2) }, turns: 3, tokens: 3 } };
    const head = positioned([...turnsOf(4), compacted]);
    expect(head.summary?.through).toBe('t2');
    const dropped = positioned([rolledBack(['t2', 't3'])], head, 100);
    expect(dropped.summary).toBeNull();
    expect(dropped.history).toEqual([]);
    // t0 and t1 are in the log before t2's end; nothing from it on is read back.
    expect(dropped.letGoThrough).toBe(endOf(2) - 1);
    // A rollback of turns after the summary keeps it.
    const kept = positioned([rolledBack(['t3'])], head, 100);
    expect(kept.summary?.through).toBe('t2');
    expect(kept.history).toEqual([]);
  });

  it('turns the fold let go of are never read back from the log once rolled back', () => {
    const head = positioned(turnsOf(5), emptyConversation(1));
    expect(head.letGoThrough).toBe(endOf(3));
    const folded = positioned([rolledBack(['t2', 't3', 't4'])], head, 100);
    expect(folded.history).toEqual([]);
    expect(folded.letGoThrough).toBe(endOf(2) - 1);
  });

  it('a running turn a rollback stops leaves no trace with its end', () => {
    const events: DomainEvent[] = [
      ...turnsOf(2),
      accepted('b', 'more'),
      started('t9', 'b', 'more'),
      replied('t9', 0, 'half'),
      { type: 'stop.requested', data: { stop: 'r', turn: 't9', mode: 'rollback' } },
      rolledBack(['t1', 't9'], 't9'),
      ended('t9', 'half', 'stopped'),
    ];
    const folded = positioned(events);
    expect(prompts(folded)).toEqual(['chat 0']);
    expect(folded.ends.map((e) => e.turn)).toEqual(['t0']);
    // Folding from any point gives the same fold.
    expect(positioned(events.slice(9), positioned(events.slice(0, 9)), 10)).toEqual(folded);
  });
});
