import { firingInputId, inputText, LATE_AFTER_MS, type DomainEvent, type EventDataOf, type InputRecord, type QueuePolicy } from '@rudder/contracts';
import { endTurn, evolveTurn, ROLLED_BACK, STOPPED, SUPERSEDED, type TurnState } from '@rudder/agent/turn';
import { rulesOf, type ForkSource } from './inputs';
import { nextFiring, spoken, type Schedule } from './inputs/schedule';
import { receiptKeys } from './receipts';
import { evolve } from './event-rules';
import { queueHeld, type ConversationState } from './state';

/**
 * How an agent's turns take steered messages (`maxTaken` 0: they take none), and how much
 * may wait in one of its conversations: steers for the running turn, inputs queued behind it,
 * and the characters of both together.
 */
export type InputPolicy = {
  maxTaken: number;
  bounds: { steers: number; chats: number; chars: number };
  /** What a new follow-up does to those waiting before it (`QueuePolicy`); absent: `each`. */
  queue?: QueuePolicy;
};

/**
 * The agents a deployment runs, as decisions need them: their names' policies, which one answers
 * when a chat names none, and why a person's edited arguments for a call of one of their tools
 * are refused (null: they are fine; absent: none are checked).
 */
export type Agents = {
  defaultAgent: string;
  policyOf(agent: string): InputPolicy | undefined;
  argumentsError?(agent: string, tool: string, args: string): string | null;
};

/**
 * What the agent's input guard said of a chat or steer, before the lock: it refused it (its
 * reason), or it failed — threw, or ran past its time budget — and so decided nothing
 * (`attempt` names this try: the same id sent again is guarded again).
 */
export type GuardOutcome = { refuse: string } | { failed: string; attempt: string };

/**
 * Decides, under the conversation's lock, what the inputs of an ingested batch add to its
 * log, one after another, each seeing the state the ones before it left, each by its kind's
 * rules (`INPUT_KINDS`). An input handled before (one of its receipt keys is in `stored`) adds nothing.
 *
 * `guarded` answers what the guard said of an input of THIS conversation (ids are the
 * client's choice: another conversation's input may share the id, never its outcome). A guard
 * that failed gets `guard.failed`, which is no receipt: the id stays undecided, and the same
 * id sent again is guarded and decided again (a later record of the id in this batch adds
 * nothing: it was sent at the same moment, and that failure answers it). `forkSource` answers
 * a fork's source as the worker read it before the lock.
 */
export function decideInputs(
  state: ConversationState,
  inputs: readonly InputRecord[],
  stored: ReadonlySet<string>,
  agents: Agents,
  now: Date,
  guarded: (input: InputRecord) => GuardOutcome | undefined = () => undefined,
  forkSource: (input: InputRecord) => ForkSource | undefined = () => undefined,
): DomainEvent[] {
  const events: DomainEvent[] = [];
  const handled = new Set(stored);
  const failed = new Set<string>();
  for (const input of inputs) {
    const keys = receiptKeys(input);
    if (keys.some((k) => handled.has(k)) || failed.has(input.id)) continue;
    const decided = rulesOf(input.type).decide(state, input, { agents, guarded: guarded(input), now, forkSource: forkSource(input) });
    if (decided.some((e) => e.type === 'guard.failed')) failed.add(input.id);
    else for (const k of keys) handled.add(k);
    state = decided.reduce(evolve, state);
    events.push(...decided);
  }
  return events;
}

/**
 * Decides, under the conversation's lock, the calls whose approval timed out by `now`: each is
 * denied (`approval.decided` with no subject), once — it leaves `awaiting` with it. Nothing for
 * a turn asked to end: its waiting calls are closed unrun with its end.
 */
export function decideTimeouts(state: ConversationState, now: Date): DomainEvent[] {
  if (state.ending !== null) return [];
  return state.awaiting
    .filter((a) => a.expiresAt !== null && Date.parse(a.expiresAt) <= now.getTime())
    .map(({ turn, step, approval, callId, tool, expiresAt }) => ({
      type: 'approval.decided',
      data: { turn, step, approval, callId, tool, decision: 'deny', reason: `timed out: nobody decided by ${expiresAt}`, arguments: null, subject: null, input: null },
    }));
}

/**
 * Decides, under the conversation's lock, everything due at `now` (its `dueAt`): the approvals
 * timed out (`decideTimeouts`), then the schedules' firings (`decideFirings`).
 */
export function decideDue(state: ConversationState, now: Date, agents: Agents, conversation: string): DomainEvent[] {
  const timeouts = decideTimeouts(state, now);
  return [...timeouts, ...decideFirings(timeouts.reduce(evolve, state), now, agents, conversation)];
}

/** Whether anything is due at `now`: the state's `dueAt` has come. */
export const isDue = (state: ConversationState, now: Date): boolean => state.dueAt !== null && Date.parse(state.dueAt) <= now.getTime();

/**
 * Decides, under the conversation's lock, the schedules due at `now` (their `next` ≤ now: never
 * early). Each due time is decided once — its `schedule.fired` or `schedule.skipped` moves the
 * schedule on in the same transaction, and its once key is the schedule's and the time's:
 * - skipped (`late`) when it is later than its `maxLateness`;
 * - skipped (`spoke`) under `unlessUserSpokeSince` when a person's chat or steer was accepted
 *   since it was made or last due;
 * - skipped (`busy`) under `onBusy: skip` while a turn runs;
 * - else it fires: its input (id `firingInputId`: the schedule's and the time's) is decided by the
 *   chat rules (`enqueue`, `skip`) or the steer rules (`steer`: it lands on the running turn, or is
 *   a turn of its own) as its maker's — refused like theirs, so a maker that lost `write` is
 *   refused, once — and `schedule.fired` follows it, `late` when it fired more than
 *   LATE_AFTER_MS after its time.
 * A cron schedule then moves to its first time after `now` (a worker back after hours fires once,
 * not once per missed time); an `at` schedule ends.
 */
export function decideFirings(state: ConversationState, now: Date, agents: Agents, conversation: string): DomainEvent[] {
  const events: DomainEvent[] = [];
  for (const schedule of state.schedules.filter((s) => Date.parse(s.next) <= now.getTime())) {
    const at = schedule.next;
    const lateness = now.getTime() - Date.parse(at);
    const next = schedule.every === null ? null : nextAfter(schedule, now);
    const skipped = (reason: EventDataOf<'schedule.skipped'>['reason']): DomainEvent[] => [{ type: 'schedule.skipped', data: { schedule: schedule.id, at, reason, next } }];
    let decided: DomainEvent[];
    if (schedule.maxLateness !== null && lateness > schedule.maxLateness) decided = skipped('late');
    else if (schedule.unlessUserSpokeSince && spoken(state) > schedule.spokenAt) decided = skipped('spoke');
    else if (schedule.onBusy === 'skip' && state.runningTurn !== null) decided = skipped('busy');
    else {
      const input = firingInput(schedule, at, conversation);
      const made = rulesOf(input.type).decide(state, input as never, { agents, guarded: undefined, now });
      const accepted = made.some((e) => e.type === 'input.accepted');
      decided = [...made, { type: 'schedule.fired', data: { schedule: schedule.id, at, late: lateness > LATE_AFTER_MS, input: input.id, accepted, next } }];
    }
    state = decided.reduce(evolve, state);
    events.push(...decided);
  }
  return events;
}

/** A firing's input: a chat (or, under `onBusy: steer`, a steer) of the schedule's maker, sent at its time. */
function firingInput(schedule: Schedule, at: string, conversation: string): InputRecord {
  const envelope = { v: 1 as const, id: firingInputId(schedule.id, at), conversation, subject: schedule.maker, sentAt: at };
  if (schedule.onBusy === 'steer') return { ...envelope, type: 'steer', text: inputText(schedule.messages) };
  return { ...envelope, type: 'chat', messages: schedule.messages, onBusy: 'enqueue' };
}

/** A cron schedule's first time after `now`; null when it never fires again (or croner now refuses what it took when it was made). */
function nextAfter(schedule: Schedule, now: Date): string | null {
  try {
    return nextFiring(schedule.every as string, schedule.tz, now);
  } catch {
    return null;
  }
}

/**
 * What undoes a rolled-back turn's changes to the plan, stored just before its end: the items
 * as they were before its first change (and the plan as this commit leaves it, so a change in
 * the same commit is undone too). Numbers stay used: `next` never goes back. Nothing when the
 * turn is not rolled back or changed nothing.
 */
function undoPlan(state: ConversationState, turn: TurnState, events: DomainEvent[]): DomainEvent[] {
  if (state.ending !== 'rollback') return [];
  const after = events.filter((e) => e.type !== 'turn.ended').reduce(evolve, state);
  if (after.todosBeforeTurn === null) return [];
  return [{ type: 'todos.updated', data: { turn: turn.id, step: turn.steps, callId: null, items: after.todosBeforeTurn, next: after.todos.next } }];
}

/** Decides, under the conversation's lock, the next turn: the first input waiting, when no turn runs and the queue is not held at `now`. */
export function startNextTurn(state: ConversationState, turn: string, now: Date): DomainEvent[] {
  const next = state.queue[0];
  if (state.runningTurn !== null || !next || queueHeld(state, now)) return [];
  return [
    { type: 'turn.started', data: { turn, prompt: { id: next.id, text: next.text } } },
    { type: 'input.delivered', data: { input: { id: next.id, kind: next.kind }, turn } },
  ];
}

/**
 * Decides, under the conversation's lock, what a commit of the running turn stores.
 *
 * At a step — the commit that stores the last open call's result, or the final answer, or a
 * final answer the output guard rejected to ask again (`answer.rejected`), or a compaction of
 * the history before a step's model request (`history.compacted`) — the
 * steers waiting on the turn are taken, after the results, in the order they were sent; at the
 * final answer they replace the turn's end, so the turn takes one more step for them. Every
 * steer that landed is taken so, even by a turn asked to end at its next step (interrupted):
 * such a turn takes the steers that landed before the interrupt, and ends `superseded` at the
 * first step with none waiting.
 *
 * A turn asked to stop (or roll back) ends `stopped`: a commit that would end it otherwise
 * (its final answer, stored while the stop was on its way) ends it stopped instead, so the
 * log says what every fold of it will say. A rolled-back turn's changes to the plan are undone
 * with its end (`todos.updated` without a call, just before `turn.ended`).
 */
export function decideTurnCommit(state: ConversationState, turn: TurnState, events: DomainEvent[]): DomainEvent[] {
  if (state.runningTurn !== turn.id) return events;
  const decided = decideStep(state, turn, events);
  // A turn asked to wind down says so as it ends, however it ends.
  if (state.ending !== 'interrupt' && state.ending !== 'wind-down') return decided;
  return decided.map((e) => (e.type === 'turn.ended' ? { ...e, data: { ...e.data, woundDown: true } } : e));
}

function decideStep(state: ConversationState, turn: TurnState, events: DomainEvent[]): DomainEvent[] {
  if (state.ending === 'stop' || state.ending === 'rollback') {
    const outcome = state.ending === 'stop' ? STOPPED : ROLLED_BACK;
    // A turn being rolled back hands the conversation to nobody: its rollback handed it back already.
    const kept = state.ending === 'rollback' ? events.filter((e) => e.type !== 'agent.changed') : events;
    return kept.flatMap((e): DomainEvent[] => (e.type === 'turn.ended' ? [...undoPlan(state, turn, kept), { ...e, data: { ...e.data, status: 'stopped', outcome } }] : [e]));
  }
  const after = events.reduce(evolveTurn, turn);
  const end = events.find((e) => e.type === 'turn.ended');
  const closed = after.openCalls.length === 0;
  // A compaction is made at a step, before its model request: past the turn's first reply, it takes the steers that came meanwhile.
  const compacted = events.some((e) => e.type === 'history.compacted') && turn.steps > 0 && closed;
  // A rejected answer that asks again is a step too: the re-ask's request takes what waits, once.
  const reasked = events.some((e) => e.type === 'answer.rejected' && e.data.reask !== null);
  const atStep = end ? end.data.status === 'completed' : (events.some((e) => e.type === 'tool.ended') && closed) || compacted || reasked;
  if (!atStep) return events;
  if (state.steers.length === 0) {
    return state.ending === 'interrupt' && !end ? [...events, ...endTurn(after, 'superseded', SUPERSEDED)] : events;
  }
  const taken = state.steers.flatMap((input): DomainEvent[] => [
    { type: 'steer.taken', data: { turn: turn.id, step: after.steps, input: { id: input.id, text: input.text } } },
    { type: 'input.delivered', data: { input: { id: input.id, kind: 'steer' }, turn: turn.id } },
  ]);
  return [...events.filter((e) => e.type !== 'turn.ended'), ...taken];
}
