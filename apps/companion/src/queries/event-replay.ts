import { eventVersion, upcastEventData, type ConversationEvent } from '@rudder/contracts';
import { MoreThan, type DataSource } from 'typeorm';
import { EventCopies } from '../read-models/entities';

/** A conversation's events after a position (all of them without one), by position: SSE replay after Last-Event-ID. */
export async function readEventsAfter(
  readModels: DataSource,
  key: string,
  page: { after: number | null; limit: number },
): Promise<{ items: ConversationEvent[] }> {
  const copies = await readModels.manager.find(EventCopies, {
    where: { conversation: key, ...(page.after === null ? {} : { position: MoreThan(page.after) }) },
    order: { position: 'ASC' },
    take: page.limit,
  });
  // The copies were parsed as ConversationEvent before they were stored (a copy made before a
  // type's shape changed is upcast).
  return { items: copies.map((copy) => ({ v: eventVersion(copy.type), ...copy, data: upcastEventData(copy.type, copy.data) }) as ConversationEvent) };
}
