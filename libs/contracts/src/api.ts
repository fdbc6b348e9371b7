import type { z } from 'zod';
import type { FollowupsAnswer, RecapAnswer, StatusAnswer, TodosAnswer, TranscriptAnswer, TurnAnswer } from './answers';

/*
 * The answers' types are inferred from their schemas (answers.ts, and each input kind's answer
 * in `inputs/<kind>.ts`: what the OpenAPI document is generated from and a client may check an
 * answer against), so each is declared once. Each input kind's HTTP body is in its module.
 */

/** `GET /v1/conversations/{key}`: `grants` is shown to the owner only. */
export type ConversationStatus = z.infer<typeof StatusAnswer>;

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
  /** A conversation has as many schedules as it may (SCHEDULES_MAX): cancel one first. */
  schedules_full: 409,
  unavailable: 503,
  /** The agent's input guard failed (threw, or ran past its budget): nothing was decided; the same id again is guarded again. */
  guard_failed: 503,
} as const;
export type ErrorCode = keyof typeof ErrorStatus;
