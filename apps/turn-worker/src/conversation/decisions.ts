import { inputText, type DomainEvent, type InputRecord } from '@rudder/contracts';
import { endTurn, evolveTurn, type TurnState } from '@rudder/agent';
import {
  evolveHead,
  inputKey,
  promoteKey,
  rejectKey,
  retractKey,
  steerAcceptedKey,
  stopKey,
  type ConversationHead,
  type PendingInput,
} from '@rudder/event-store';

/**
 * How the agent's turns take steered messages (`maxTaken` 0: they take none), and how much
 * may wait in a conversation: steers for the running turn, inputs queued behind it, and
 * the characters of both together.
 */
export type InputPolicy = { maxTaken: number; bounds: { steers: number; chats: number; chars: number } };

/** The once keys that tell whether an input was handled before (redelivered, or sent again). */
export function probeKeys(input: InputRecord): string[] {
  switch (input.type) {
    case 'chat':
    case 'steer':
      return [inputKey(input.id), rejectKey(input.id)];
    case 'stop':
      return [stopKey(input.id)];
    case 'retract':
      return [retractKey(input.id)];
    case 'promote':
      return [promoteKey(input.id), steerAcceptedKey(input.target)];
    default: {
      const never: never = input;
      throw new Error(`unknown input ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Decides, under the conversation's lock, what the inputs of an ingested batch add to its
 * log, one after another, each seeing the head as the ones before it left it. An input
 * handled before adds nothing.
 */
export function acceptInputs(
  head: ConversationHead,
  inputs: readonly InputRecord[],
  stored: ReadonlySet<string>,
  policy: InputPolicy,
): DomainEvent[] {
  const events: DomainEvent[] = [];
  const handled = new Set(stored);
  for (const input of inputs) {
    const keys = probeKeys(input);
    if (keys.some((k) => handled.has(k))) continue;
    const decided = decideInput(head, input, policy);
    for (const k of keys) handled.add(k);
    head = decided.reduce(evolveHead, head);
    events.push(...decided);
  }
  return events;
}

function decideInput(head: ConversationHead, input: InputRecord, policy: InputPolicy): DomainEvent[] {
  switch (input.type) {
    case 'chat':
    case 'steer': {
      const text = input.type === 'chat' ? inputText(input.messages) : input.text;
      const refusal = refuse(head, input, text, policy);
      if (refusal) return [{ type: 'input.rejected', data: { input: { id: input.id, kind: input.type, text }, ...refusal } }];
      if (input.type === 'steer') {
        const landed = lands(head, policy);
        return [
          accepted(input.id, 'steer', [input.text], input.subject, input.sentAt),
          { type: 'steer.accepted', data: { input: { id: input.id, text: input.text }, turn: landed ? head.runningTurn : null, landed } },
        ];
      }
      const events = [accepted(input.id, 'chat', input.messages, input.subject, input.sentAt)];
      if (head.runningTurn && (input.onBusy === 'interrupt' || input.onBusy === 'rollback')) {
        events.push({ type: 'stop.requested', data: { stop: input.id, turn: head.runningTurn, mode: input.onBusy } });
      }
      return events;
    }
    case 'stop': {
      const events: DomainEvent[] = [{ type: 'stop.requested', data: { stop: input.id, turn: head.runningTurn, mode: 'stop' } }];
      if (input.discardPending) {
        for (const pending of [...head.steers, ...head.queue]) {
          events.push({ type: 'input.discarded', data: { input: pendingInput(pending), stop: input.id } });
        }
      }
      return events;
    }
    case 'retract': {
      const pending = [...head.queue, ...head.steers];
      const target =
        'id' in input.target ? pending.find((p) => p.id === ('id' in input.target ? input.target.id : '')) : latestOf(pending, input.target.latest);
      if (target) return [{ type: 'input.retracted', data: { input: pendingInput(target), retract: input.id } }];
      const targetId = 'id' in input.target ? input.target.id : null;
      return [{ type: 'retract.refused', data: { retract: input.id, target: targetId, code: 'not_found' } }];
    }
    case 'promote': {
      const target = head.queue.find((p) => p.id === input.target && p.kind === 'chat');
      if (!target) return [{ type: 'promote.refused', data: { promote: input.id, target: input.target, code: 'not_found' } }];
      // With the steering queue full, the follow-up stays one: answered as a turn of its own.
      const landed = lands(head, policy) && head.steers.length < policy.bounds.steers;
      return [{ type: 'steer.accepted', data: { input: { id: target.id, text: target.text }, turn: landed ? head.runningTurn : null, landed } }];
    }
    default: {
      const never: never = input;
      throw new Error(`unknown input ${JSON.stringify(never)}`);
    }
  }
}

/** A steer lands when a turn runs that is not ending and has taken fewer than the cap. */
const lands = (head: ConversationHead, policy: InputPolicy) =>
  head.runningTurn !== null && head.ending === null && head.steersLanded < policy.maxTaken;

/** Why an input is refused, if it is: a failed precondition, a busy conversation, or a full queue. */
function refuse(
  head: ConversationHead,
  input: Extract<InputRecord, { type: 'chat' | 'steer' }>,
  text: string,
  policy: InputPolicy,
): { code: 'precondition_failed' | 'busy' | 'queue_full'; message: string } | null {
  if (input.ifLastInputId !== undefined && input.ifLastInputId !== head.lastInputId) {
    return { code: 'precondition_failed', message: `the last accepted input is ${head.lastInputId ?? 'none'}, not ${input.ifLastInputId}` };
  }
  if (input.type === 'chat' && input.onBusy === 'reject' && head.runningTurn !== null) {
    return { code: 'busy', message: `a turn is running (${head.runningTurn}) and onBusy is reject` };
  }
  const { bounds } = policy;
  const waiting = [...head.steers, ...head.queue];
  const chars = waiting.reduce((sum, p) => sum + p.text.length, 0);
  const queued = head.queue.length;
  const steering = head.steers.length;
  const counts = `${steering} steering, ${queued} queued, ${chars} characters waiting`;
  const intoSteering = input.type === 'steer' && lands(head, policy);
  if (intoSteering ? steering >= bounds.steers : queued >= bounds.chats) {
    return { code: 'queue_full', message: `the ${intoSteering ? 'steering' : 'follow-up'} queue is full (${counts}; at most ${intoSteering ? bounds.steers : bounds.chats})` };
  }
  if (chars + text.length > bounds.chars) {
    return { code: 'queue_full', message: `too much text is waiting (${counts}; at most ${bounds.chars} characters together)` };
  }
  return null;
}

const latestOf = (pending: PendingInput[], kind: 'chat' | 'steer') =>
  pending.filter((p) => p.kind === kind).sort((a, b) => a.seq - b.seq).at(-1);

const pendingInput = ({ id, kind, text }: PendingInput) => ({ id, kind, text });

const accepted = (id: string, kind: 'chat' | 'steer', messages: string[], subject: string, sentAt: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind, text: inputText(messages), messages, subject, sentAt } },
});

/** Decides, under the conversation's lock, the next turn: the first input waiting, when no turn runs. */
export function startNextTurn(head: ConversationHead, turn: string): DomainEvent[] {
  const next = head.queue[0];
  if (head.runningTurn !== null || !next) return [];
  return [
    { type: 'turn.started', data: { turn, prompt: { id: next.id, text: next.text } } },
    { type: 'input.delivered', data: { input: { id: next.id, kind: next.kind }, turn } },
  ];
}

/**
 * Decides, under the conversation's lock, what a commit of the running turn stores. At a
 * step — the commit that stores the last open call's result, or the final answer — the
 * steers waiting on the turn are taken, after the results, in the order they were sent; at
 * the final answer they replace the turn's end, so the turn takes one more step for them.
 * A turn asked to end at its next step (interrupted) takes none: it ends `superseded` there.
 */
export function takeSteersAtStep(head: ConversationHead, turn: TurnState, events: DomainEvent[]): DomainEvent[] {
  if (head.runningTurn !== turn.id) return events;
  const after = events.reduce(evolveTurn, turn);
  const end = events.find((e) => e.type === 'turn.ended');
  const atStep = end ? end.data.status === 'completed' : events.some((e) => e.type === 'tool.ended') && after.openCalls.length === 0;
  if (!atStep) return events;
  if (head.ending === 'interrupt' && !end) return [...events, ...endTurn(after, 'superseded', 'interrupted by a newer input at a step')];
  if (head.steers.length === 0 || head.ending !== null) return events;
  const taken = head.steers.flatMap((input): DomainEvent[] => [
    { type: 'steer.taken', data: { turn: turn.id, step: after.steps, input: { id: input.id, text: input.text } } },
    { type: 'input.delivered', data: { input: { id: input.id, kind: 'steer' }, turn: turn.id } },
  ]);
  return [...events.filter((e) => e.type !== 'turn.ended'), ...taken];
}
