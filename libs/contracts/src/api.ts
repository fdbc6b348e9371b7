import { z } from 'zod';
import { AgentName, InputId } from './conversation-key';
import { StorableString } from './storable-text';
import { APPROVAL_REASON_MAX } from './inputs';
import type {
  ApprovalDecisionAnswer,
  ChatAcceptedAnswer,
  FollowupsAnswer,
  GrantDecisionAnswer,
  RecapAnswer,
  TodosAnswer,
  RetractedAnswer,
  StatusAnswer,
  SteerDecisionAnswer,
  StopDecisionAnswer,
  TranscriptAnswer,
  TurnAnswer,
} from './answers';

/*
 * The answers' types are inferred from their schemas (answers.ts: what the OpenAPI document
 * is generated from and a client may check an answer against), so each is declared once.
 */

/** `DELETE /v1/conversations/{key}/inputs/{id}` (or `?latest=chat|steer`): the input taken back. */
export type RetractAnswer = z.infer<typeof RetractedAnswer>;

const Text = StorableString.trim().min(1, 'text must not be empty');

/** `POST /v1/conversations/{key}/chat`: `text`, or `messages` for several user messages answered by one reply. */
export const ChatBody = z
  .object({
    text: Text.optional(),
    messages: z.array(Text).min(1, 'messages must hold at least one message').max(32).optional(),
    id: InputId.optional(),
    onBusy: z.enum(['enqueue', 'reject', 'interrupt', 'rollback']).optional(),
    ifLastInputId: InputId.optional(),
    agent: AgentName.optional(),
  })
  .strict()
  .refine((b) => (b.text === undefined) !== (b.messages === undefined), {
    message: 'give either text or messages, not both and not neither',
  });
export type ChatBody = z.infer<typeof ChatBody>;

export type ChatAccepted = z.infer<typeof ChatAcceptedAnswer>;

/** `POST /v1/conversations/{key}/steer`. */
export const SteerBody = z.object({ text: Text, id: InputId.optional(), ifLastInputId: InputId.optional() }).strict();
export type SteerBody = z.infer<typeof SteerBody>;

/** The worker's decision: `landed` means `turn` shows it to the model before it ends. */
export type SteerAnswer = z.infer<typeof SteerDecisionAnswer>;

/** `POST /v1/conversations/{key}/stop`. */
export const StopBody = z
  .object({ discardPending: z.boolean().optional(), turn: StorableString.min(1).max(200).optional(), graceful: z.boolean().optional() })
  .strict();
export type StopAnswer = z.infer<typeof StopDecisionAnswer>;

/** `GET /v1/conversations/{key}`: `grants` is shown to the owner only. */
export type ConversationStatus = z.infer<typeof StatusAnswer>;

/** `PUT /v1/conversations/{key}/grants/{subject}`. */
export const GrantBody = z.object({ access: z.enum(['read', 'write']) }).strict();
/** A grant as decided: `access` null once revoked (`DELETE`). */
export type GrantAnswer = z.infer<typeof GrantDecisionAnswer>;

export type TranscriptPage = z.infer<typeof TranscriptAnswer>;
export type TranscriptItem = TranscriptPage['items'][number];

/** `running` until the turn ends, then how it ended; `outcome` why (null while running or when completed); `usage` null when the model reports none. */
export type TurnView = z.infer<typeof TurnAnswer>;

/** `GET /v1/conversations/{key}/followups?n=`: next messages to offer as buttons (empty on any failure). */
export type Followups = z.infer<typeof FollowupsAnswer>;

/** `GET /v1/conversations/{key}/recap`: where the conversation stood, for a person returning (empty on any failure). */
export type Recap = z.infer<typeof RecapAnswer>;

/** `GET /v1/conversations/{key}/todos`: the agent's plan, as of `position`. */
export type Todos = z.infer<typeof TodosAnswer>;

/**
 * `POST /v1/conversations/{key}/approvals/{approvalId}`: run the waiting call (`approve`, with
 * `arguments` — an edited version of its arguments, a JSON object its tool's schema must accept —
 * or as the model called it), or not (`deny`; `reason` is what the model reads).
 */
export const ApprovalBody = z
  .object({
    decision: z.enum(['approve', 'deny']),
    reason: StorableString.max(APPROVAL_REASON_MAX).optional(),
    arguments: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type ApprovalBody = z.infer<typeof ApprovalBody>;
export type ApprovalDecision = z.infer<typeof ApprovalDecisionAnswer>;

/** Every error answer of the HTTP API. `code` is stable; `message` is for people. */
export type ErrorBody = { error: { code: ErrorCode; message: string; details?: unknown } };

/** Named errors with stable codes, mapped once to HTTP statuses. */
export const ErrorStatus = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  precondition_failed: 412,
  text_too_long: 413,
  id_reused: 422,
  unknown_agent: 400,
  refused: 422,
  /** A person's edited arguments for a call that waits for approval, refused by its tool's schema. */
  invalid_arguments: 422,
  agent_mismatch: 409,
  queue_full: 429,
  unavailable: 503,
  /** The agent's input guard failed (threw, or ran past its budget): nothing was decided; the same id again is guarded again. */
  guard_failed: 503,
} as const;
export type ErrorCode = keyof typeof ErrorStatus;
