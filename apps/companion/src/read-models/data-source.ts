import { openSchema, schemaDataSource, sharded, type ShardMap, type Sharded } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { readModelEntities } from './entities';
import { ReadModels1764590000000 } from './migrations/1764590000000-read-models';
import { NoAppliedEvents1764900000000 } from './migrations/1764900000000-no-applied-events';
import { RefusalDigests1765000000000 } from './migrations/1765000000000-refusal-digests';
import { ConversationState1765100000000 } from './migrations/1765100000000-conversation-state';
import { Affordances1765200000000 } from './migrations/1765200000000-affordances';
import { WoundDown1765300000000 } from './migrations/1765300000000-wound-down';
import { Approvals1765400000000 } from './migrations/1765400000000-approvals';
import { RolledBack1765500000000 } from './migrations/1765500000000-rolled-back';
import { Collapsed1765600000000 } from './migrations/1765600000000-collapsed';
import { ForkedFrom1765700000000 } from './migrations/1765700000000-forked-from';

/** The PostgreSQL schema the companion owns; nothing else writes to it. */
export const READ_MODELS_SCHEMA = 'companion';

/** The read models' TypeORM migrations, oldest first (`migrations/`). */
export const readModelMigrations = [
  ReadModels1764590000000,
  NoAppliedEvents1764900000000,
  RefusalDigests1765000000000,
  ConversationState1765100000000,
  Affordances1765200000000,
  WoundDown1765300000000,
  Approvals1765400000000,
  RolledBack1765500000000,
  Collapsed1765600000000,
  ForkedFrom1765700000000,
];

/** The read models' DataSource, initialized, its migrations applied. `destroy()` closes it. */
export const openReadModels = (databaseUrl: string): Promise<DataSource> =>
  openSchema(schemaDataSource(databaseUrl, READ_MODELS_SCHEMA, { entities: readModelEntities, migrations: readModelMigrations }));

/**
 * The read models on every PostgreSQL primary (`shardMap`): a conversation's are on the primary
 * of its partition, beside its event log. One primary is the map of one.
 */
export type ReadModels = Sharded<DataSource>;

/** `openReadModels` on every primary of `map`, one after the other; if one fails, those opened are closed again. */
export async function openShardedReadModels(map: ShardMap): Promise<ReadModels> {
  const opened: DataSource[] = [];
  try {
    for (const url of map.urls) opened.push(await openReadModels(url));
  } catch (error) {
    await Promise.all(opened.map((dataSource) => dataSource.destroy().catch(() => undefined)));
    throw error;
  }
  return sharded(map, opened);
}

/** Closes the read models' connections on every primary. */
export const closeReadModels = (readModels: ReadModels): Promise<void> => Promise.all(readModels.all.map((dataSource) => dataSource.destroy())).then(() => undefined);

/** The read models, on every primary (Nest token; a `ReadModels`). */
export const READ_MODELS = Symbol('companion.read-models');
