import type { InputPolicy } from '../decide';
import { mayAccess, type ConversationState, type PendingInput } from '../state';

/** The rules several input kinds share, each written once. */

/** Why a chat or steer is refused (beside its agent and its guard): the code its `input.rejected` gives, and what it says. */
export type Refusal = { code: 'forbidden' | 'precondition_failed' | 'busy' | 'queue_full' | 'agent_mismatch'; message: string };

/**
 * Why `subject` may not write to the conversation, or null when it may: the owner — the subject
 * whose input opened it — and those it granted `write` may (`mayAccess`). Every input that
 * changes the conversation asks it, under the lock, so no timing lets another subject in.
 */
export const writeRefusal = (state: ConversationState, subject: string): string | null =>
  mayAccess(state, subject, 'write') ? null : `${subject} may not write to this conversation`;

/** A steer lands when a turn runs that is not ending and has taken fewer than the cap. */
export const lands = (state: ConversationState, policy: InputPolicy): boolean =>
  state.runningTurn !== null && state.ending === null && state.steersLanded < policy.maxTaken;

/** The steering queue has room for one more steer. */
export const steeringRoom = (state: ConversationState, policy: InputPolicy): boolean => state.steers.length < policy.bounds.steers;

/** A text's characters as the bounds count them: code points (an emoji is one), as the 429's counts do. */
export function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * Why a text may not wait in the conversation, or null when it may: the queue it would join is
 * full — the steering queue when it waits for the running turn (`intoSteering`), else the
 * follow-up queue — or the characters of all that waits would pass the bound with it.
 */
export function boundsRefusal(state: ConversationState, policy: InputPolicy, text: string, intoSteering: boolean): Refusal | null {
  const { bounds } = policy;
  const chars = [...state.steers, ...state.queue].reduce((sum, p) => sum + characters(p.text), 0);
  const queued = state.queue.length;
  const steering = state.steers.length;
  const counts = `${steering} steering, ${queued} queued, ${chars} characters waiting`;
  if (intoSteering ? !steeringRoom(state, policy) : queued >= bounds.chats) {
    return { code: 'queue_full', message: `the ${intoSteering ? 'steering' : 'follow-up'} queue is full (${counts}; at most ${intoSteering ? bounds.steers : bounds.chats})` };
  }
  if (chars + characters(text) > bounds.chars) {
    return { code: 'queue_full', message: `too much text is waiting (${counts}; at most ${bounds.chars} characters together)` };
  }
  return null;
}

/** A pending input as the events that take it back or drop it name it. */
export const pendingInput = ({ id, kind, text }: PendingInput) => ({ id, kind, text });
