import { z } from 'zod';
import { ConversationKey } from './conversation-key';
import { EventData, inputDigest, type EventDataOf, type EventType } from './events';

/**
 * The records of `agent.events` as stored, published and announced: each event type's record
 * version and the upcast of older ones, the record schemas and their parse; and the records of
 * `agent.tokens`. The events' data, type by type, is `EventData` (`events.ts`).
 */

/**
 * The record version `v` of each event type's current shape: 1, but for `input.rejected`, at 2
 * since its refusal keeps a digest of the input's text instead of the text. A published shape
 * never changes in place; a reader upcasts an older version (`upcastEventData`).
 */
export type EventVersion<T extends EventType> = T extends 'input.rejected' ? 2 : 1;
export const eventVersion = <T extends EventType>(type: T): EventVersion<T> => (type === 'input.rejected' ? 2 : 1) as EventVersion<T>;

/**
 * An event's data in its type's current shape, from any version of it: `input.rejected` of
 * version 1 (`input.text`) becomes version 2 (`input.digest`, the text's `inputDigest`).
 * Anything else, and anything not shaped like an old version, is returned as it is (a schema
 * then says whether it is valid).
 */
export function upcastEventData(type: string, data: unknown): unknown {
  if (type !== 'input.rejected' || !isObject(data) || !isObject(data.input) || typeof data.input.text !== 'string' || 'digest' in data.input) return data;
  const { text, ...input } = data.input;
  return { ...data, input: { ...input, digest: inputDigest(text) } };
}
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** An event as stored and published. */
export type ConversationEvent = {
  [T in EventType]: {
    /** The record version of its type's shape (`eventVersion`): 2 for `input.rejected`, 1 for the others. */
    v: EventVersion<EventType>;
    id: string;
    conversation: string;
    position: number;
    at: string;
    type: T;
    data: EventDataOf<T>;
  };
}[EventType];

const envelope = { v: z.literal(1), id: z.string(), conversation: ConversationKey, position: z.number().int(), at: z.string() };
const record = <T extends EventType>(type: T) =>
  z.object({ ...envelope, type: z.literal(type), data: EventData[type] });
/** `input.rejected` at version 2; a version 1 record (its input's text) is read as version 2. */
const rejectedRecord = z.object({
  ...envelope,
  v: z.preprocess((v) => (v === 1 ? 2 : v), z.literal(2)),
  type: z.literal('input.rejected'),
  data: z.preprocess((data) => upcastEventData('input.rejected', data), EventData['input.rejected']),
});
/** Each event type's record schema, derived from `EventData`: `input.rejected`'s at version 2, every other at 1. */
type RecordSchemas = { [T in EventType]: T extends 'input.rejected' ? typeof rejectedRecord : ReturnType<typeof record<T>> };
const recordSchemas = Object.fromEntries(
  (Object.keys(EventData) as EventType[]).map((type) => [type, type === 'input.rejected' ? rejectedRecord : record(type)]),
) as RecordSchemas;
const recordList = Object.values(recordSchemas) as RecordSchemas[EventType][];

/** A record of `agent.events`, in its type's current version: older versions are upcast as they are read. */
export const ConversationEventRecord = z.discriminatedUnion('type', recordList as [RecordSchemas[EventType], ...RecordSchemas[EventType][]]);

/** Parses a record of `agent.events`; throws a ZodError when it is not one. */
export const parseConversationEvent = (value: unknown): ConversationEvent =>
  ConversationEventRecord.parse(value);

/**
 * What a write announces as it commits (PostgreSQL `NOTIFY`, the event store's `announcedCte`):
 * one conversation's records just stored, in order, `last`, the position of the last of them, and
 * `after`, the position of its last event before them — so a reader that has every event up to
 * `after` knows these come next, none missing between. A shortcut to the records' own copies on `agent.events`, never instead of them.
 */
export const Announcement = z
  .object({
    conversation: ConversationKey,
    /** The position of the last of `events`: read from the payload's start by every gateway, following the conversation or not (the log has produced it). */
    last: z.number().int().positive().optional(),
    after: z.number().int().nonnegative(),
    events: ConversationEventRecord.array().min(1),
  })
  // Handed out by `conversation`: never another conversation's events under it.
  .refine((a) => a.events.every((e) => e.conversation === a.conversation), { message: "an announcement holds its conversation's events only", path: ['events'] })
  .refine((a) => a.last === undefined || a.last === a.events[a.events.length - 1].position, { message: 'last is the position of the last event', path: ['last'] });
export type Announcement = z.infer<typeof Announcement>;

/** A record on `agent.tokens`: a piece of the model's streamed reply. Best effort. */
export const TokenRecord = z.object({
  v: z.literal(1),
  conversation: ConversationKey,
  turn: z.string(),
  step: z.number().int(),
  text: z.string(),
});
export type TokenRecord = z.infer<typeof TokenRecord>;
