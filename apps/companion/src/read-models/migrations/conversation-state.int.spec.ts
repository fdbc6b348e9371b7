import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CONTEXT } from '@rudder/contracts';
import { openSchema, schemaDataSource } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { createFreshDatabase } from '../../../../../test/support/companion/test-database';
import { conversationLog } from '../../../../../test/support/companion/conversation-log';
import { readConversationStatus } from '../../queries/conversation-status';
import { openReadModels, READ_MODELS_SCHEMA, readModelMigrations } from '../data-source';
import { ConversationState1765100000000 } from './1765100000000-conversation-state';

let database: Awaited<ReturnType<typeof createFreshDatabase>>;

beforeAll(async () => {
  database = await createFreshDatabase();
});

afterAll(async () => {
  await database?.drop();
});

describe('the conversation state migration', () => {
  it("folds each existing conversation's copies with evolve, so its status reads as before", async () => {
    // The read models as the migrations before this one left them, with a conversation folded by the older companion.
    const before: DataSource = await openSchema(schemaDataSource(database.url, READ_MODELS_SCHEMA, { migrations: readModelMigrations.slice(0, readModelMigrations.indexOf(ConversationState1765100000000)) }));
    const key = 'old/one';
    const log = conversationLog(key);
    const steer = { id: 's1', text: 'faster' };
    const events = [
      log.accepted('a', 'go'),
      log.started('t1', { id: 'a', text: 'go' }),
      log.accepted('b', 'then this'),
      log.steer(steer.id, steer.text),
      log.decided(steer, 't1'),
      log.event({ type: 'access.granted', data: { grant: 'g1', subject: 'carol', access: 'read' } }),
    ];
    await before.query(
      `INSERT INTO companion.conversations (key, owner, last_input_id, last_input_position, running_turn, running_started_at, grants, position)
       VALUES ($1, 'alice', 's1', 4, 't1', $2, '{"carol":"read"}', 6)`,
      [key, events[1].at],
    );
    for (const e of events) {
      await before.query(`INSERT INTO companion.events (conversation, position, id, type, data, at) VALUES ($1, $2, $3, $4, $5, $6)`, [key, e.position, e.id, e.type, e.data, e.at]);
    }
    await before.query(`INSERT INTO companion.conversations (key, position) VALUES ('old/empty', 0)`);
    await before.destroy();

    const readModels = await openReadModels(database.url);
    try {
      expect(await readConversationStatus(readModels, key)).toEqual({
        key,
        running: { turn: 't1', startedAt: events[1].at },
        // A state folded before edits existed shows its items as sent (revision 0).
        steering: [{ ...steer, revision: 0 }],
        queue: [{ id: 'b', kind: 'chat', text: 'then this', revision: 0 }],
        lastInputId: 's1',
        agent: null,
        context: NO_CONTEXT,
        owner: 'alice',
        grants: [{ subject: 'carol', access: 'read' }],
        todos: [],
        awaiting: [],
        heldUntil: null,
        schedules: [],
        position: 6,
      });
      expect(await readConversationStatus(readModels, 'old/empty')).toMatchObject({ running: null, steering: [], queue: [], owner: null, position: 0 });
    } finally {
      await readModels.destroy();
    }
  });
});
