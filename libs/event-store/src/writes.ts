import type { ConversationEvent, DomainEvent } from '@rudder/contracts';

/**
 * What the store's write paths share: the stream's rules they are given, what a writer holds of
 * a conversation and what a write stored, the one lock order, and the error a used once key is.
 * The paths: `appendToConversation` (one conversation: a turn's steps), `appendToConversations`
 * (an ingested batch of one partition), each either the one statement of `appendIfUnchanged`
 * (shared by `groupedWrites`; new conversations' `appendIfNew`) or a transaction
 * (`write-transaction.ts`).
 */

/** An event's once key was already used: what it records is stored already (a retry, or another owner). */
export class AlreadyStoredError extends Error {
  readonly code = 'already_stored';
  constructor(readonly conversation: string, detail: string) {
    super(`already stored in ${conversation}: ${detail}`);
  }
}

/** A unique violation on `(conversation, once_key)` as `AlreadyStoredError`; any other error as it is. */
export const alreadyStored = (error: unknown, conversation: string): unknown =>
  typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505'
    ? new AlreadyStoredError(conversation, String((error as { detail?: string }).detail ?? ''))
    : error;

/**
 * What the store needs to know of a stream's rules, and no more: the state kept on each
 * conversation's row (parsed from its jsonb, evolved by each event appended), each event's
 * once key, and whether a state has work left (a worker taking the partition resumes those).
 */
export type StreamRules<S> = {
  parse(stored: unknown): S;
  evolve(state: S, event: DomainEvent): S;
  onceKey(event: DomainEvent): string;
  hasOpenWork(state: S): boolean;
};

/**
 * The one order in which every write of several conversations locks their rows, and the outbox
 * relay its watermarks' rows: their keys' UTF-8 bytes, which is what `COLLATE "C"` compares in
 * the database. Not the column's collation (an ICU or libc locale orders `a` before `B`, bytes
 * the other way round), nor JavaScript's default order (UTF-16 code units, which put a
 * character above U+FFFF before U+E000–U+FFFF): two writers locking the same rows in two orders
 * can deadlock. Every statement that locks several conversations sorts them
 * `COLLATE "C"`; an array handed to one is sorted by this.
 */
export const byKeyBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/**
 * What a write stored, as the outbox relay needs it to publish the write without reading it
 * back: `stored`, each written conversation's last position `before` them (0: none) — every
 * event of it up to there was committed before, and none lies between — and the traceparent
 * stored with them (null without).
 */
export type Written = { stored: ConversationEvent[]; before: Map<string, number>; trace: string | null };

/** What a writer holds of a conversation: its state as of its last event, at `position`. */
export type Seen<S> = { position: number; state?: S };
