import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { appendToConversation } from './append-to-conversation';
import { appendToConversations } from './append-to-conversations';
import { AlreadyStoredError } from './writes';
import { takePartitions } from './fencing';
import { readConversation } from './read';
import { plainRules, useEventStoreDatabase } from './testing';

/**
 * "Uniqueness is enforced by the database (unique keys), not by timing": a row whose once key
 * its conversation already holds is refused by PostgreSQL itself, whoever writes it.
 */
const db = useEventStoreDatabase();

const accepted = (id: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: id, messages: [id], subject: 's', sentAt: '2026-11-30T00:00:00.000Z' } },
});
const turnEnded = (turn: string): DomainEvent => ({
  type: 'turn.ended',
  data: { turn, status: 'completed', outcome: 'done', content: 'x', steered: [] },
});

describe('once keys', () => {
  it('a row written directly with a once key the conversation holds is refused by the database (23505), and nothing is added', async () => {
    const epochs = await takePartitions(db.pool(), [0], 'once-test');
    await appendToConversations(db.pool(), plainRules, 0, epochs, [{ conversation: 'direct', probe: [] }], () => [accepted('in-1')]);
    const insert = (key: string) =>
      db.pool().query(`INSERT INTO event_store.events (id, conversation, type, data, once_key) VALUES ($1, 'direct', 'input.accepted', '{}'::jsonb, $2)`, [randomUUID(), key]);
    await expect(insert(plainRules.onceKey(accepted('in-1')))).rejects.toMatchObject({ code: '23505', constraint: expect.stringMatching(/once_key/) });
    // Another key is another event.
    await insert('input:another');
    const { rows } = await db.pool().query(`SELECT once_key FROM event_store.events WHERE conversation = 'direct' ORDER BY position`);
    expect(rows.map((r) => r.once_key)).toEqual([plainRules.onceKey(accepted('in-1')), 'input:another']);
  });

  it('appending an event whose once key is stored throws AlreadyStoredError and writes nothing of its commit', async () => {
    const epochs = await takePartitions(db.pool(), [1], 'once-test');
    await appendToConversations(db.pool(), plainRules, 1, epochs, [{ conversation: 'append', probe: [] }], () => [accepted('in-1')]);
    await expect(appendToConversation(db.pool(), plainRules, 'append', epochs, () => [accepted('in-2'), accepted('in-1')])).rejects.toBeInstanceOf(AlreadyStoredError);
    await appendToConversation(db.pool(), plainRules, 'append', epochs, () => [turnEnded('t-1')]);
    await expect(appendToConversation(db.pool(), plainRules, 'append', epochs, () => [turnEnded('t-1')])).rejects.toBeInstanceOf(AlreadyStoredError);
    expect((await readConversation(db.pool(), 'append')).map((e) => e.type)).toEqual(['input.accepted', 'turn.ended']);
  });
});
