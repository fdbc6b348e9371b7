import { parseConversationEvent, type ConversationEvent } from '@rudder/contracts';

export type ReadEventRecord = { ok: true; event: ConversationEvent } | { ok: false; reason: string };

/**
 * Reads the value of an `agent.events` record. A record that is not a `ConversationEvent`
 * (not JSON, wrong shape, a time PostgreSQL cannot hold) gives the reason instead: the
 * consumer logs it and moves on, so it never blocks its partition.
 */
export function readEventRecord(value: Buffer | null): ReadEventRecord {
  if (value === null) return { ok: false, reason: 'the record has no value' };
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8'));
  } catch (error) {
    return { ok: false, reason: `the value is not JSON: ${(error as Error).message}` };
  }
  let event: ConversationEvent;
  try {
    event = parseConversationEvent(json);
  } catch (error) {
    return { ok: false, reason: `the value is not a conversation event: ${(error as Error).message}` };
  }
  if (Number.isNaN(Date.parse(event.at))) return { ok: false, reason: `the event's time is not a date: ${event.at}` };
  return { ok: true, event };
}
