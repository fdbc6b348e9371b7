import { inputDigest, type DomainEvent, type MessageKind, type Rejection } from '@rudder/contracts';
import type { InputPolicy } from '../decide';
import { derivedKeyRefusal } from '../derived-keys';
import { receiptKey } from '../once-keys';
import { sameInput } from '../same-input';
import type { ConversationState } from '../state';
import { REUSED, type DecisionContext, type InputOf, type Reading } from './rules';
import { boundsRefusal, writeRefusal, type Refusal } from './shared';

/** What chats and steers — the inputs that carry a user's message — share: their decision's checks, their once keys, their refusal's receipt. */

type MessageInput = InputOf<MessageKind>;

/** How a chat or a steer differs in its decision; the rest is `decideMessage`'s. */
export type MessageDecision = {
  /** Its text: what the bounds count, and what a refusal keeps the digest of. */
  text: string;
  /** The agent it names (a chat's `agent`): it must be the conversation's agent now (its first input's, or its last handoff's). */
  named?: string | undefined;
  /** The nonce of the derived conversation key it was made for (a chat of the Responses door). */
  derivedFrom?: string | undefined;
  /** Why its kind refuses it, after the checks every message passes and before the bounds. */
  refuse?(policy: InputPolicy): Refusal | null;
  /** It would wait for the running turn, in the steering queue (else behind it, in the follow-up queue): the bound it counts against. */
  intoSteering?(policy: InputPolicy): boolean;
  /** What its acceptance stores after the conversation's opening: its `input.accepted` first. */
  accept(policy: InputPolicy): DomainEvent[];
};

/**
 * A chat's or a steer's decision: an agent this deployment does not run, or one its input
 * guard refused (`refused`), or a `messageRefusal`, is an `input.rejected` — keeping the text's
 * digest, not the text: enough to answer the same input sent again, and nothing a flood of
 * refused inputs grows the log with. A guard that failed decides nothing (`guard.failed`).
 * Accepted, the conversation's first input opens it for its subject and its agent.
 */
export function decideMessage(state: ConversationState, input: MessageInput, { agents, guarded }: DecisionContext, how: MessageDecision): DomainEvent[] {
  const agent = state.agent ?? how.named ?? agents.defaultAgent;
  const policy = agents.policyOf(agent);
  const reject = (refusal: Rejection): DomainEvent[] => [
    { type: 'input.rejected', data: { input: { id: input.id, kind: input.type, digest: inputDigest(how.text) }, ...refusal } },
  ];
  if (!policy) return reject({ code: 'unknown_agent', message: `there is no agent named ${agent} in this deployment` });
  if (guarded && 'failed' in guarded) {
    return [{ type: 'guard.failed', data: { input: { id: input.id, kind: input.type }, attempt: guarded.attempt, message: guarded.failed } }];
  }
  if (guarded) return reject({ code: 'refused', message: guarded.refuse });
  const refusal = messageRefusal(state, input, how, policy);
  if (refusal) return reject(refusal);
  const opened: DomainEvent[] = state.agent === null ? [{ type: 'conversation.opened', data: { owner: input.subject, agent } }] : [];
  return [...opened, ...how.accept(policy)];
}

/**
 * Why a message is refused, if it is: a derived conversation key it may not write to
 * (`derivedKeyRefusal`), a subject that may not write, another agent named, a failed
 * precondition (`ifLastInputId`), its kind's own reasons, or a full queue.
 */
function messageRefusal(state: ConversationState, input: MessageInput, how: MessageDecision, policy: InputPolicy): Refusal | null {
  const derived = derivedKeyRefusal(state.owner, { conversation: input.conversation, subject: input.subject, derivedFrom: how.derivedFrom });
  if (derived !== null) return { code: 'forbidden', message: derived };
  const unwritable = writeRefusal(state, input.subject);
  if (unwritable !== null) return { code: 'forbidden', message: unwritable };
  if (how.named !== undefined && state.agent !== null && how.named !== state.agent) {
    return { code: 'agent_mismatch', message: `the conversation is answered by ${state.agent} now (its first input's agent, or the one its last handoff chose)` };
  }
  if (input.ifLastInputId !== undefined && input.ifLastInputId !== state.lastInputId) {
    return { code: 'precondition_failed', message: `the last accepted input is ${state.lastInputId ?? 'none'}, not ${input.ifLastInputId}` };
  }
  return how.refuse?.(policy) ?? boundsRefusal(state, policy, how.text, how.intoSteering?.(policy) ?? false);
}

/** A message's acceptance: what waits of it (its text, messages, subject), and a chat's place (`ahead`). */
export function acceptance(input: MessageInput, text: string, messages: string[], ahead?: number): DomainEvent {
  const { id, type: kind, subject, sentAt } = input;
  return { type: 'input.accepted', data: { input: { id, kind, text, messages, subject, sentAt }, ...(ahead === undefined ? {} : { ahead }) } };
}

/** A message's once keys: its acceptance, or its refusal. */
export const messageReceiptKeys = (input: MessageInput): string[] => [receiptKey.input(input.id), receiptKey.rejected(input.id)];

/** A message's refusal: this input when it is the same input (its kind, its text's digest: `input.rejected` keeps no text). */
export const rejected = <K extends MessageKind>(): Reading<K, 'input.rejected', never, Rejection> => ({
  settles: true,
  read: (data, input) => (sameInput(data.input, input) ? { refusal: { code: data.code, message: data.message } } : REUSED),
});

/** A message's guard failed, which decides nothing; under another kind, the id is another input's. */
export const guardFailed = <K extends MessageKind>(kind: K): Reading<K, 'guard.failed', never, never> => ({
  settles: false,
  liveOnly: true,
  read: (data) => (data.input.kind === kind ? { guardFailed: data.message } : REUSED),
});
