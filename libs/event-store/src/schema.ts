import { openSchema, schemaDataSource } from '@rudder/runtime';
import { EventLog1764590000000 } from './migrations/1764590000000-event-log';
import { EventTrace1764600000000 } from './migrations/1764600000000-event-trace';
import { Snapshots1764700000000 } from './migrations/1764700000000-snapshots';
import { LastPosition1764800000000 } from './migrations/1764800000000-last-position';
import { PublishedWatermark1764900000000 } from './migrations/1764900000000-published-watermark';
import { Agents1765300000000 } from './migrations/1765300000000-agents';
import { DueConversations1765400000000 } from './migrations/1765400000000-due-conversations';
import { MovedPartitions1765500000000 } from './migrations/1765500000000-moved-partitions';

/** The PostgreSQL schema the turn workers own: the conversations' event log, which is also the outbox. */
export const EVENT_STORE_SCHEMA = 'event_store';

/** The event log's TypeORM migrations, oldest first (`migrations/`). */
export const eventStoreMigrations = [EventLog1764590000000, EventTrace1764600000000, Snapshots1764700000000, LastPosition1764800000000, PublishedWatermark1764900000000, Agents1765300000000, DueConversations1765400000000, MovedPartitions1765500000000];

/**
 * Creates or updates the event store's tables (TypeORM migrations, serialized across
 * processes). The store itself reads and writes with its own SQL on a `pg` pool: see
 * docs/architecture.md, "The event store's SQL".
 */
export async function migrateEventStore(databaseUrl: string): Promise<void> {
  const dataSource = await openSchema(schemaDataSource(databaseUrl, EVENT_STORE_SCHEMA, { migrations: eventStoreMigrations, poolSize: 1 }));
  await dataSource.destroy();
}
