import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { createTestDatabase, type TestDatabase } from '@rudder/dev-services';
import { createPool, migrate, type Pool } from '@rudder/runtime';
import { appendToConversation, appendToConversations } from './append';
import { FencedError, takePartitions } from './fencing';
import { readConversation } from './read';
import { EVENT_STORE_SCHEMA, eventStoreMigrations } from './schema';

let database: TestDatabase;
let pool: Pool;
beforeAll(async () => {
  database = await createTestDatabase(inject('databaseUrl'));
  pool = createPool(database.url);
  await migrate(pool, EVENT_STORE_SCHEMA, eventStoreMigrations);
});
afterAll(async () => {
  await pool.end();
  await database.drop();
});

const chat = (id: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: id, messages: [id], subject: 's', sentAt: '2026-11-30T00:00:00.000Z' } },
});

describe('fencing by partition epochs', () => {
  it('a writer whose partition was taken by another commits nothing, in a turn or in a batch', async () => {
    const first = await takePartitions(pool, [0, 1], 'worker-a');
    await appendToConversations(pool, 0, first, [{ conversation: 'c', probe: [] }], () => [chat('one')]);

    const second = await takePartitions(pool, [0], 'worker-b');
    expect(second.get(0)).toBe(first.get(0)! + 1);

    await expect(appendToConversation(pool, 'c', first, () => [chat('zombie turn write')])).rejects.toBeInstanceOf(FencedError);
    await expect(appendToConversations(pool, 0, first, [{ conversation: 'c', probe: [] }], () => [chat('zombie batch')])).rejects.toBeInstanceOf(
      FencedError,
    );
    expect((await readConversation(pool, 'c')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['one']);

    await appendToConversation(pool, 'c', second, () => [chat('two')]);
    expect((await readConversation(pool, 'c')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['one', 'two']);
  });

  it('a writer that never took the partition is fenced too', async () => {
    await expect(appendToConversations(pool, 5, new Map(), [{ conversation: 'd', probe: [] }], () => [chat('x')])).rejects.toBeInstanceOf(FencedError);
  });

  it('taking an epoch waits for a write in flight under the old one', async () => {
    const epochs = await takePartitions(pool, [2], 'worker-a');
    // A write in flight holds the partition's row in share mode, as appendToConversation does.
    const writer = await pool.connect();
    await writer.query('BEGIN');
    await writer.query('SELECT 1 FROM event_store.partition_owners WHERE partition = 2 FOR SHARE');
    let taken = false;
    const takeover = takePartitions(pool, [2], 'worker-b').then((e) => ((taken = true), e));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(taken).toBe(false);
    await writer.query('COMMIT');
    writer.release();
    expect((await takeover).get(2)).toBe(epochs.get(2)! + 1);
  });
});
