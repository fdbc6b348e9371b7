import { openSchema, schemaDataSource } from '@rudder/runtime';
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

/** The read models' DataSource (Nest token). */
export const READ_MODELS = Symbol('companion.read-models');
