import { inputText, type DomainEvent, type InputRecord } from '@rudder/contracts';
import { evolveTurn, type TurnState } from '@rudder/agent';
import { evolveHead, inputKey, stopKey, type ConversationHead } from '@rudder/event-store';

/** How the agent's turns take steered messages. `maxTaken` 0 means its turns take none. */
export type SteeringPolicy = { maxTaken: number };

/** The once key that tells whether an input was stored before. */
export const probeKey = (input: InputRecord) => (input.type === 'stop' ? stopKey(input.id) : inputKey(input.id));

/**
 * Decides, under the conversation's lock, what the inputs of an ingested batch add to its log.
 * An input stored before adds nothing. A steer lands on the running turn when there is one and
 * it has taken fewer than the cap: the turn's close takes the same lock, so `landed` is a
 * promise. A stop names the turn it stops.
 */
export function acceptInputs(
  head: ConversationHead,
  inputs: readonly InputRecord[],
  stored: ReadonlySet<string>,
  policy: SteeringPolicy,
): DomainEvent[] {
  const events: DomainEvent[] = [];
  const seen = new Set(stored);
  for (const input of inputs) {
    if (seen.has(probeKey(input))) continue;
    seen.add(probeKey(input));
    const decided = acceptInput(head, input, policy);
    head = decided.reduce(evolveHead, head);
    events.push(...decided);
  }
  return events;
}

function acceptInput(head: ConversationHead, input: InputRecord, policy: SteeringPolicy): DomainEvent[] {
  switch (input.type) {
    case 'chat':
      return [accepted(input.id, 'chat', input.messages, input.subject, input.sentAt)];
    case 'steer': {
      const landed = head.runningTurn !== null && head.steersLanded < policy.maxTaken;
      return [
        accepted(input.id, 'steer', [input.text], input.subject, input.sentAt),
        { type: 'steer.accepted', data: { input: { id: input.id, text: input.text }, turn: landed ? head.runningTurn : null, landed } },
      ];
    }
    case 'stop':
      return [{ type: 'stop.requested', data: { stop: input.id, turn: head.runningTurn } }];
    default: {
      const never: never = input;
      throw new Error(`unknown input ${JSON.stringify(never)}`);
    }
  }
}

const accepted = (id: string, kind: 'chat' | 'steer', messages: string[], subject: string, sentAt: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind, text: inputText(messages), messages, subject, sentAt } },
});

/**
 * Decides, under the conversation's lock, what a commit of the running turn stores. At a
 * step — the commit that stores the last open call's result, or the final answer — the
 * steers waiting on the turn are taken, after the results, in the order they were sent; at
 * the final answer they replace the turn's end, so the turn takes one more step for them.
 */
export function takeSteersAtStep(head: ConversationHead, turn: TurnState, events: DomainEvent[]): DomainEvent[] {
  if (head.steers.length === 0 || head.runningTurn !== turn.id) return events;
  const after = events.reduce(evolveTurn, turn);
  const end = events.find((e) => e.type === 'turn.ended');
  const atStep = end
    ? end.data.status === 'completed'
    : events.some((e) => e.type === 'tool.ended') && after.openCalls.length === 0;
  if (!atStep) return events;
  const taken = head.steers.map((input): DomainEvent => ({ type: 'steer.taken', data: { turn: turn.id, step: after.steps, input } }));
  return [...events.filter((e) => e.type !== 'turn.ended'), ...taken];
}
