import { inputDigest, inputText, type DomainEvent, type EventDataOf, type InputRecord } from '@rudder/contracts';
import { endTurn, evolveTurn, ROLLED_BACK, STOPPED, SUPERSEDED, type TurnState } from '@rudder/agent/turn';
import { derivedKeyRefusal } from './derived-keys';
import { receiptKeys } from './once-keys';
import { evolve, mayAccess, type ConversationState, type PendingInput } from './state';

/**
 * How an agent's turns take steered messages (`maxTaken` 0: they take none), and how much
 * may wait in one of its conversations: steers for the running turn, inputs queued behind it,
 * and the characters of both together.
 */
export type InputPolicy = { maxTaken: number; bounds: { steers: number; chats: number; chars: number } };

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
 * log, one after another, each seeing the state the ones before it left. An input handled
 * before (one of its receipt keys is in `stored`) adds nothing.
 *
 * `guarded` answers what the guard said of an input of THIS conversation (ids are the
 * client's choice: another conversation's input may share the id, never its outcome). A guard
 * that failed gets `guard.failed`, which is no receipt: the id stays undecided, and the same
 * id sent again is guarded and decided again (a later record of the id in this batch adds
 * nothing: it was sent at the same moment, and that failure answers it).
 */
export function decideInputs(
  state: ConversationState,
  inputs: readonly InputRecord[],
  stored: ReadonlySet<string>,
  agents: Agents,
  guarded: (input: InputRecord) => GuardOutcome | undefined = () => undefined,
): DomainEvent[] {
  const events: DomainEvent[] = [];
  const handled = new Set(stored);
  const failed = new Set<string>();
  for (const input of inputs) {
    const keys = receiptKeys(input);
    if (keys.some((k) => handled.has(k)) || failed.has(input.id)) continue;
    const decided = decideInput(state, input, agents, guarded(input));
    if (decided.some((e) => e.type === 'guard.failed')) failed.add(input.id);
    else for (const k of keys) handled.add(k);
    state = decided.reduce(evolve, state);
    events.push(...decided);
  }
  return events;
}

function decideInput(state: ConversationState, input: InputRecord, agents: Agents, guarded: GuardOutcome | undefined): DomainEvent[] {
  switch (input.type) {
    case 'chat':
    case 'steer': {
      const text = input.type === 'chat' ? inputText(input.messages) : input.text;
      const named = input.type === 'chat' ? input.agent : undefined;
      const agent = state.agent ?? named ?? agents.defaultAgent;
      const policy = agents.policyOf(agent);
      if (policy && guarded && 'failed' in guarded) {
        return [{ type: 'guard.failed', data: { input: { id: input.id, kind: input.type }, attempt: guarded.attempt, message: guarded.failed } }];
      }
      const refusal = !policy
        ? { code: 'unknown_agent' as const, message: `there is no agent named ${agent} in this deployment` }
        : guarded !== undefined && 'refuse' in guarded
          ? { code: 'refused' as const, message: guarded.refuse }
          : refuse(state, input, text, named, policy);
      // A refusal keeps the text's digest, not the text: enough to answer the same input sent
      // again, and nothing a flood of refused inputs grows the log with (#31 item 10).
      if (refusal) return [{ type: 'input.rejected', data: { input: { id: input.id, kind: input.type, digest: inputDigest(text) }, ...refusal } }];
      const opened: DomainEvent[] = state.agent === null ? [{ type: 'conversation.opened', data: { owner: input.subject, agent } }] : [];
      const messages = input.type === 'chat' ? input.messages : [input.text];
      // A chat's place: the follow-ups waiting (steers that missed their turn among them) and the running turn.
      const ahead = input.type === 'chat' ? { ahead: state.queue.length + (state.runningTurn ? 1 : 0) } : {};
      const accepted: DomainEvent = {
        type: 'input.accepted',
        data: { input: { id: input.id, kind: input.type, text, messages, subject: input.subject, sentAt: input.sentAt }, ...ahead },
      };
      if (input.type === 'steer') {
        const landed = lands(state, policy!);
        return [
          ...opened,
          accepted,
          { type: 'steer.accepted', data: { input: { id: input.id, text: input.text }, turn: landed ? state.runningTurn : null, landed } },
        ];
      }
      const events = [...opened, accepted];
      const mode = windDownMode(state, input);
      if (mode !== null) events.push({ type: 'stop.requested', data: { stop: input.id, turn: state.runningTurn, mode } });
      return events;
    }
    case 'stop': {
      if (!mayAccess(state, input.subject, 'write')) return [{ type: 'stop.refused', data: { stop: input.id, code: 'forbidden' } }];
      // A stop that names a turn no longer running stops nothing, and discards nothing: it was meant for that turn.
      const meant = input.turn === undefined || input.turn === state.runningTurn;
      const mode = input.graceful ? 'wind-down' : 'stop';
      const events: DomainEvent[] = [{ type: 'stop.requested', data: { stop: input.id, turn: meant ? state.runningTurn : null, mode } }];
      if (meant && input.discardPending) {
        for (const pending of [...state.steers, ...state.queue]) {
          events.push({ type: 'input.discarded', data: { input: pendingInput(pending), stop: input.id } });
        }
      }
      return events;
    }
    case 'retract': {
      const { target } = input;
      if (!mayAccess(state, input.subject, 'write')) {
        return [{ type: 'retract.refused', data: { retract: input.id, target: 'id' in target ? target.id : null, code: 'forbidden' } }];
      }
      const pending = [...state.queue, ...state.steers];
      const found = 'id' in target ? pending.find((p) => p.id === target.id) : latestOf(pending, target.latest);
      if (found) return [{ type: 'input.retracted', data: { input: pendingInput(found), retract: input.id } }];
      return [{ type: 'retract.refused', data: { retract: input.id, target: 'id' in target ? target.id : null, code: 'not_found' } }];
    }
    case 'promote': {
      if (!mayAccess(state, input.subject, 'write')) return [{ type: 'promote.refused', data: { promote: input.id, target: input.target, code: 'forbidden' } }];
      const target = state.queue.find((p) => p.id === input.target && p.kind === 'chat');
      const policy = agents.policyOf(state.agent ?? agents.defaultAgent);
      if (!target || !policy) return [{ type: 'promote.refused', data: { promote: input.id, target: input.target, code: 'not_found' } }];
      // With the steering queue full, the follow-up stays one: answered as a turn of its own.
      const landed = lands(state, policy) && state.steers.length < policy.bounds.steers;
      return [{ type: 'steer.accepted', data: { input: { id: target.id, text: target.text }, turn: landed ? state.runningTurn : null, landed } }];
    }
    case 'grant': {
      const refused = (code: EventDataOf<'grant.refused'>['code']): DomainEvent[] => [{ type: 'grant.refused', data: { grant: input.id, subject: input.grantee, code } }];
      if (state.owner === null) return refused('not_found');
      if (input.subject !== state.owner) return refused('forbidden');
      // The owner reads and writes always: a grant to itself would list a grant that changes nothing.
      if (input.grantee === state.owner) return refused('owner');
      return [{ type: 'access.granted', data: { grant: input.id, subject: input.grantee, access: input.access } }];
    }
    case 'approval':
      return decideApproval(state, input, agents);
    default: {
      const never: never = input;
      throw new Error(`unknown input ${JSON.stringify(never)}`);
    }
  }
}

/**
 * A person's decision on a call waiting for approval: stored (`approval.decided`) when a call
 * waits under that approval and the turn is not ending (a stop closes its waiting calls unrun),
 * else refused — and refused when its subject may not write, or the tool's schema refuses the
 * edited arguments of an approval. The call leaves `awaiting` with it: decided once.
 */
function decideApproval(state: ConversationState, input: Extract<InputRecord, { type: 'approval' }>, agents: Agents): DomainEvent[] {
  const refused = (code: EventDataOf<'approval.refused'>['code'], message: string): DomainEvent[] => [
    { type: 'approval.refused', data: { input: input.id, approval: input.approval, code, message } },
  ];
  if (!mayAccess(state, input.subject, 'write')) return refused('forbidden', `${input.subject} may not write to this conversation`);
  const waiting = state.awaiting.find((a) => a.approval === input.approval);
  if (!waiting) return refused('not_awaiting', `no call waits for approval ${input.approval}`);
  if (state.ending !== null) return refused('not_awaiting', `the turn was asked to end (${state.ending}): its waiting calls are closed unrun`);
  const edited = input.decision === 'approve' ? (input.arguments ?? null) : null;
  const error = edited === null || state.agent === null ? null : (agents.argumentsError?.(state.agent, waiting.tool, edited) ?? null);
  if (error !== null) return refused('invalid_arguments', `the edited arguments of ${waiting.tool} are refused: ${error}`);
  const { turn, step, approval, callId, tool } = waiting;
  return [
    {
      type: 'approval.decided',
      data: { turn, step, approval, callId, tool, decision: input.decision, reason: input.reason ?? null, arguments: edited, subject: input.subject, input: input.id },
    },
  ];
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

/** A steer lands when a turn runs that is not ending and has taken fewer than the cap. */
const lands = (state: ConversationState, policy: InputPolicy) =>
  state.runningTurn !== null && state.ending === null && state.steersLanded < policy.maxTaken;

type Refusal = { code: 'forbidden' | 'precondition_failed' | 'busy' | 'queue_full' | 'agent_mismatch'; message: string };

/**
 * Why an input is refused, if it is: a derived conversation key it may not write to
 * (`derivedKeyRefusal`), a subject that may not write (the owner — the subject whose input
 * opened the conversation — and those it granted `write`; decided here, with the input, so no
 * timing lets another subject in), another agent named, a failed precondition, a busy
 * conversation (onBusy reject, or `ifSteerable` where it would wind down a turn of an agent
 * that takes no steers), or a full queue.
 */
function refuse(
  state: ConversationState,
  input: Extract<InputRecord, { type: 'chat' | 'steer' }>,
  text: string,
  named: string | undefined,
  policy: InputPolicy,
): Refusal | null {
  const derived = derivedKeyRefusal(state.owner, { conversation: input.conversation, subject: input.subject, derivedFrom: input.type === 'chat' ? input.derivedFrom : undefined });
  if (derived !== null) return { code: 'forbidden', message: derived };
  if (!mayAccess(state, input.subject, 'write')) {
    return { code: 'forbidden', message: `${input.subject} may not write to this conversation` };
  }
  if (named !== undefined && state.agent !== null && named !== state.agent) {
    return { code: 'agent_mismatch', message: `the conversation is answered by ${state.agent}; its agent never changes` };
  }
  if (input.ifLastInputId !== undefined && input.ifLastInputId !== state.lastInputId) {
    return { code: 'precondition_failed', message: `the last accepted input is ${state.lastInputId ?? 'none'}, not ${input.ifLastInputId}` };
  }
  if (input.type === 'chat' && input.onBusy === 'reject' && state.runningTurn !== null) {
    return { code: 'busy', message: `a turn is running (${state.runningTurn}) and onBusy is reject` };
  }
  if (input.type === 'chat' && input.ifSteerable === true && windDownMode(state, input) !== null && policy.maxTaken === 0) {
    return { code: 'busy', message: `a turn is running (${state.runningTurn}) and the agent takes no steers, so it is not wound down for another input` };
  }
  const { bounds } = policy;
  const waiting = [...state.steers, ...state.queue];
  const chars = waiting.reduce((sum, p) => sum + p.text.length, 0);
  const queued = state.queue.length;
  const steering = state.steers.length;
  const counts = `${steering} steering, ${queued} queued, ${chars} characters waiting`;
  const intoSteering = input.type === 'steer' && lands(state, policy);
  if (intoSteering ? steering >= bounds.steers : queued >= bounds.chats) {
    return { code: 'queue_full', message: `the ${intoSteering ? 'steering' : 'follow-up'} queue is full (${counts}; at most ${intoSteering ? bounds.steers : bounds.chats})` };
  }
  if (chars + text.length > bounds.chars) {
    return { code: 'queue_full', message: `too much text is waiting (${counts}; at most ${bounds.chars} characters together)` };
  }
  return null;
}

/**
 * How a chat asks the running turn to end, if it does: `onBusy` interrupt or rollback; or, for
 * a chat that continues an input (`continues`), an interrupt when that input no longer waits
 * (its turn is the one running) — one that continues an input still queued queues behind it.
 */
function windDownMode(state: ConversationState, input: Extract<InputRecord, { type: 'chat' }>): 'interrupt' | 'rollback' | null {
  if (state.runningTurn === null) return null;
  if (input.onBusy === 'interrupt' || input.onBusy === 'rollback') return input.onBusy;
  if (input.continues !== undefined && !state.queue.some((p) => p.id === input.continues)) return 'interrupt';
  return null;
}

const latestOf = (pending: PendingInput[], kind: 'chat' | 'steer') =>
  pending.filter((p) => p.kind === kind).sort((a, b) => a.seq - b.seq).at(-1);

const pendingInput = ({ id, kind, text }: PendingInput) => ({ id, kind, text });

/** Decides, under the conversation's lock, the next turn: the first input waiting, when no turn runs. */
export function startNextTurn(state: ConversationState, turn: string): DomainEvent[] {
  const next = state.queue[0];
  if (state.runningTurn !== null || !next) return [];
  return [
    { type: 'turn.started', data: { turn, prompt: { id: next.id, text: next.text } } },
    { type: 'input.delivered', data: { input: { id: next.id, kind: next.kind }, turn } },
  ];
}

/**
 * Decides, under the conversation's lock, what a commit of the running turn stores.
 *
 * At a step — the commit that stores the last open call's result, or the final answer, or a
 * compaction of the history before a step's model request (`history.compacted`) — the
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
    return events.flatMap((e): DomainEvent[] => (e.type === 'turn.ended' ? [...undoPlan(state, turn, events), { ...e, data: { ...e.data, status: 'stopped', outcome } }] : [e]));
  }
  const after = events.reduce(evolveTurn, turn);
  const end = events.find((e) => e.type === 'turn.ended');
  const closed = after.openCalls.length === 0;
  // A compaction is made at a step, before its model request: past the turn's first reply, it takes the steers that came meanwhile.
  const compacted = events.some((e) => e.type === 'history.compacted') && turn.steps > 0 && closed;
  const atStep = end ? end.data.status === 'completed' : (events.some((e) => e.type === 'tool.ended') && closed) || compacted;
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
