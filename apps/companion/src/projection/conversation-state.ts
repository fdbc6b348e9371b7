import { EventData, type ConversationEvent } from '@rudder/contracts';
import { evolve, type ConversationState } from '@rudder/conversation';

/**
 * True for an event of a type this companion's contract knows. A newer worker may publish
 * types it does not know: the companion skips them (its views miss them until it is
 * upgraded), while `evolve` refuses them, so every fold asks this first.
 */
export const isKnownEvent = (event: { type: string }): event is ConversationEvent => Object.hasOwn(EventData, event.type);

/**
 * The conversation's state as the worker folds it: `evolve`, the one place of the queue and
 * steering rules. One reading of older logs on top: a log older than `conversation.opened`
 * has the subject of its first accepted input as its owner (as the companion always read it;
 * a log `decide` wrote opens the conversation before it accepts anything, so this never
 * applies to one).
 */
export function foldState(state: ConversationState, event: ConversationEvent): ConversationState {
  const next = evolve(state, event);
  return event.type === 'input.accepted' && next.owner === null ? { ...next, owner: event.data.input.subject } : next;
}
