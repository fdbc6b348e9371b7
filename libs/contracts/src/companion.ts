import { z } from 'zod';
import { ContextStatus, Grant, NO_CONTEXT, StatusFields, TurnApproval } from './answers';
import { MessageKind } from './conversation-key';
import { EventData, TodoItem } from './events';
import { ScheduleItem } from './inputs';

/**
 * The companion's internal read API, as the gateway reads it: one schema each, used by both
 * sides (the companion's queries return these types; the gateway parses its answers with
 * them). The repository ships as one, so there are no fallbacks for older versions of either.
 */

/**
 * `GET /conversations/{key}`: the public status (`StatusFields`) plus what the gateway
 * authorizes by — `owner` (null until an input is accepted) and every grant. Neither leaves the
 * gateway, but for the owner, who sees the grants.
 */
export const CompanionStatus = StatusFields.extend({
  owner: z.string().nullable(),
  grants: z.array(Grant),
  /**
   * The position of the conversation's last event folded into this status (0: none): owner
   * and grants are exact as of it, and a stream folds access from the events after it.
   */
  position: z.number().int().nonnegative().default(0),
  /** The agent's plan as of `position` (`todos.updated`); empty when it keeps none. */
  todos: z.array(TodoItem).default([]),
  /** The conversation's schedules as of `position`, in the order they were made. */
  schedules: z.array(ScheduleItem).default([]),
  /** (Absent from a companion older than the gateway: no request known.) */
  context: ContextStatus.default(NO_CONTEXT),
  awaiting: StatusFields.shape.awaiting.default([]),
  heldUntil: StatusFields.shape.heldUntil.default(null),
});
export type CompanionStatus = z.infer<typeof CompanionStatus>;

/** Where an input is: waiting, reached a turn, taken back, dropped by a stop, refused, or answered by a later follow-up's turn (`inputs.collapsed`). */
export const InputState = z.enum(['pending', 'delivered', 'retracted', 'discarded', 'rejected', 'collapsed']);
export type InputState = z.infer<typeof InputState>;

/** The worker's refusal of a chat or a steer (`input.rejected`). */
export const Rejection = EventData['input.rejected'].pick({ code: true, message: true });
export type Rejection = z.infer<typeof Rejection>;

/**
 * `GET /conversations/{key}/inputs/{id}`: an input as the gateway checks idempotency against
 * it (same id and text: the same input), accepted or rejected. `steer` is the worker's decision
 * on a steer or a promoted follow-up (null while it has none, and for a chat); `rejection` why
 * it was refused (null unless `state` is `rejected`). A rejected input has no `text`, no
 * `messages` and no `subject`: the refusal keeps only the `digest` of its joined text
 * (`inputDigest`, `input.rejected` version 2), so a retry is compared by digest. (A companion
 * from before version 2 answered a rejected input's `text` instead: compare by that.)
 */
export const CompanionInput = z.object({
  id: z.string(),
  kind: MessageKind,
  text: z.string().optional(),
  digest: z.string().optional(),
  messages: z.array(z.string()).optional(),
  subject: z.string().nullable(),
  steer: z.object({ turn: z.string().nullable(), landed: z.boolean() }).nullable(),
  state: InputState,
  rejection: Rejection.nullable(),
  /** The log position of its acceptance (or refusal): what answers it comes after it. */
  position: z.number().int().nonnegative().optional(),
});
export type CompanionInput = z.infer<typeof CompanionInput>;

/**
 * An agent's settings for the follow-ups and recap the companion makes for its conversations
 * (`affordances` of its definition; docs/agents.md): instructions that replace the deployment's
 * prompt of each kind, and the name of the model to ask (on the deployment's server). A worker
 * writes them to `event_store.agents` at start-up; the companion reads them by the
 * conversation's agent. Anything not set is the deployment's (FOLLOWUPS_PROMPT, RECAP_PROMPT,
 * AFFORDANCE_MODEL).
 */
export const AgentAffordances = z.object({
  followupsPrompt: z.string().min(1).max(8000).optional(),
  recapPrompt: z.string().min(1).max(8000).optional(),
  model: z.string().min(1).max(200).optional(),
});
export type AgentAffordances = z.infer<typeof AgentAffordances>;

/**
 * `GET /conversations/{key}/approvals/{approvalId}`: a call's approval as the gateway checks a
 * decision against it (404 when the companion knows no such approval of the conversation).
 */
export const CompanionApproval = TurnApproval.extend({ step: z.number().int().nonnegative() });
export type CompanionApproval = z.infer<typeof CompanionApproval>;
