import { z } from 'zod';
import { ConversationKey, InputId, isFiringInputId, isScheduleCallInputId } from '../conversation-key';
import type { EventContract } from '../event-parts';
import { StorableString } from '../storable-text';

/** What the input kinds' contracts share: the record's envelope, a user's text, and the shape of a kind's contract. */

/** A user message: storable as it is (no NUL, no lone surrogate), never empty. */
export const UserText = StorableString.min(1);

/** A user's text in an HTTP body: trimmed, never empty, storable. */
export const BodyText = StorableString.trim().min(1, 'text must not be empty');

/**
 * Records on `agent.inputs`, key = conversation key, value = JSON of one of the kinds' records.
 * Versioned by `v`: a new shape gets a new version and readers upcast the old one.
 */
export const envelope = {
  v: z.literal(1),
  /** Idempotency key: the same id again is the same input and is handled once. Never a schedule's firing's (`firingInputId`) nor a schedule call's (`isScheduleCallInputId`): those the worker makes. */
  id: InputId.refine((id) => !isFiringInputId(id), 'an input id may not end in :fired:<digits> (the ids of schedules\' firings)').refine(
    (id) => !isScheduleCallInputId(id),
    'an input id may not end in :call:<16 hex digits> or :call:<16 hex digits>:rolled-back (the ids of the schedule tool\'s calls)',
  ),
  conversation: ConversationKey,
  /** Who wrote it (the gateway's authenticated subject); other producers name themselves. */
  subject: StorableString.min(1).max(200).default('anonymous'),
  sentAt: z.iso.datetime(),
};

/**
 * An input kind's contract, in one module of `inputs/`: its record on `agent.inputs` (`type`
 * names the kind), and the events it declares — the events that answer it and that only its
 * decisions make, each with the input ids it names. Its HTTP body and answer are declared beside it.
 */
export type InputKindContract<R extends z.ZodObject = z.ZodObject, E extends Record<string, EventContract> = Record<string, EventContract>> = {
  readonly record: R;
  readonly events: E;
};
export const inputKind = <R extends z.ZodObject, E extends Record<string, EventContract>>(contract: InputKindContract<R, E>) => contract;
