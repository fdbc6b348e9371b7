import { z } from 'zod';
import { AgentName, ApprovalId, ConversationKey, InputId, MessageKind, Subject } from './conversation-key';
import { StorableString } from './storable-text';

/** A user message: storable as it is (no NUL, no lone surrogate), never empty. */
const UserText = StorableString.min(1);

/**
 * Records on `agent.inputs`, key = conversation key, value = JSON of one of these.
 * Versioned by `v`: a new shape gets a new version and readers upcast the old one.
 */
const envelope = {
  v: z.literal(1),
  /** Idempotency key: the same id again is the same input and is handled once. */
  id: InputId,
  conversation: ConversationKey,
  /** Who wrote it (the gateway's authenticated subject); other producers name themselves. */
  subject: StorableString.min(1).max(200).default('anonymous'),
  sentAt: z.iso.datetime(),
};

export const ChatInputV1 = z.object({
  ...envelope,
  type: z.literal('chat'),
  /** One or more user messages, answered by one reply. */
  messages: z.array(UserText).min(1),
  /** What it does to a busy conversation (a turn running); see OnBusy. */
  onBusy: z.enum(['enqueue', 'reject', 'interrupt', 'rollback']).default('enqueue'),
  /** Refused (`precondition_failed`) unless the conversation's last accepted input is this one. */
  ifLastInputId: InputId.optional(),
  /**
   * Refused (`busy`) while a turn runs if the conversation's agent takes no steers: its running
   * turn is not to be wound down for this input (the Responses door's follow-up on a running
   * response: 409 `conversation_locked`). Absent: no such condition. A worker that does not
   * know it leaves it out (the record's other fields are unchanged).
   */
  ifSteerable: z.literal(true).optional(),
  /**
   * The input this chat continues (the Responses door's `previous_response_id`): while a turn
   * runs and that input no longer waits (its turn is the running one), the running turn winds
   * down as for `onBusy: interrupt`; while that input still waits in the queue, this chat queues
   * behind it and winds nothing down. Absent: `onBusy` alone says what it does to a busy conversation.
   */
  continues: InputId.optional(),
  /**
   * The nonce of a conversation key the Responses door derived for this chat's subject
   * (`derivedConversationKey` in @rudder/conversation). A derived key's conversation is opened
   * only by a chat whose subject and nonce derive it, and such a chat is refused (`forbidden`)
   * by a conversation another subject opened.
   */
  derivedFrom: InputId.optional(),
  /** The agent that answers the conversation, chosen by its first input (the default agent when absent); later inputs may only name the same. */
  agent: AgentName.optional(),
});
export type ChatInput = z.infer<typeof ChatInputV1>;

/** A message for the running turn of the conversation: taken at its next step, or answered as a turn of its own. */
export const SteerInputV1 = z.object({
  ...envelope,
  type: z.literal('steer'),
  text: UserText,
  ifLastInputId: InputId.optional(),
});
export type SteerInput = z.infer<typeof SteerInputV1>;

/** Stops the conversation's running turn (if any); what it had not taken is answered afterwards. */
export const StopInputV1 = z.object({
  ...envelope,
  type: z.literal('stop'),
  /** Also discard every pending input of the conversation (each is reported discarded, never answered). */
  discardPending: z.boolean().default(false),
  /** The turn the stop means: when it is no longer running, the stop stops (and discards) nothing. */
  turn: StorableString.min(1).max(200).optional(),
  /**
   * Ask the turn to wind down instead: its tools see `windDown` and may return what they have,
   * the model is asked once more, and the turn ends `completed` (`woundDown`). Absent: false.
   */
  graceful: z.boolean().optional(),
});
export type StopInput = z.infer<typeof StopInputV1>;

/**
 * Takes back a pending input: `target` by id, or the latest pending one of a queue. `id` is
 * the retraction's own: its decision (`input.retracted` or `retract.refused`) names it.
 */
export const RetractInputV1 = z.object({
  ...envelope,
  type: z.literal('retract'),
  target: z.union([z.object({ id: InputId }), z.object({ latest: MessageKind })]),
});
export type RetractInput = z.infer<typeof RetractInputV1>;

/** Turns a pending follow-up into a steer of the running turn; `id` is the promotion's own. */
export const PromoteInputV1 = z.object({
  ...envelope,
  type: z.literal('promote'),
  target: InputId,
});
export type PromoteInput = z.infer<typeof PromoteInputV1>;

/** The owner gives `grantee` read or write access to the conversation, or (`access: null`) takes it back. */
export const GrantInputV1 = z.object({
  ...envelope,
  type: z.literal('grant'),
  grantee: Subject,
  access: z.enum(['read', 'write']).nullable(),
});
export type GrantInput = z.infer<typeof GrantInputV1>;

/** How long an approval's reason and edited arguments may be. */
export const APPROVAL_REASON_MAX = 2000;
export const APPROVAL_ARGUMENTS_MAX = 100_000;

/**
 * A person's decision on a tool call that waits for approval (`approval.requested`): run it
 * (with `arguments`, an edited version of the call's JSON arguments the tool's schema must
 * accept), or not (`reason` is what the model reads). `id` is the decision's own.
 */
export const ApprovalInputV1 = z.object({
  ...envelope,
  type: z.literal('approval'),
  approval: ApprovalId,
  decision: z.enum(['approve', 'deny']),
  reason: StorableString.max(APPROVAL_REASON_MAX).optional(),
  arguments: StorableString.max(APPROVAL_ARGUMENTS_MAX).optional(),
});
export type ApprovalInput = z.infer<typeof ApprovalInputV1>;

export const InputRecord = z.discriminatedUnion('type', [ChatInputV1, SteerInputV1, StopInputV1, RetractInputV1, PromoteInputV1, GrantInputV1, ApprovalInputV1]);
export type InputRecord = z.infer<typeof InputRecord>;
export type InputKind = InputRecord['type'];

/** The user messages an input brings: a chat's messages, a steer's text, none for the controls. */
export const messagesOf = (input: InputRecord): string[] =>
  input.type === 'chat' ? input.messages : input.type === 'steer' ? [input.text] : [];

/** The text a model and a reader see for an input of several messages. */
export const inputText = (messages: readonly string[]): string => messages.join('\n\n');
