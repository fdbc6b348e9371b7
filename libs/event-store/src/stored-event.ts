import { eventVersion, upcastEventData, type ConversationEvent, type EventType } from '@rudder/contracts';

export type EventRow = {
  position: string;
  id: string;
  conversation: string;
  type: string;
  data: unknown;
  at: Date;
  /** The W3C traceparent of the write that stored it; null when tracing was off. */
  trace: string | null;
};

/**
 * Rows come from our own writes of validated domain events, so their shape is trusted here;
 * consumers of agent.events validate with the contract's schema. A row stored in an older
 * version of its type's shape (an `input.rejected` with its text) is upcast, and published, in
 * the current one.
 */
export function toConversationEvent(row: EventRow): ConversationEvent {
  return {
    v: eventVersion(row.type as EventType),
    id: row.id,
    conversation: row.conversation,
    position: Number(row.position),
    at: row.at.toISOString(),
    type: row.type,
    data: upcastEventData(row.type, row.data),
  } as ConversationEvent;
}

export const EVENT_COLUMNS = 'position, id, conversation, type, data, at, trace';
