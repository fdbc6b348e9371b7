import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { appendToConversations } from './append-to-conversations';
import { takePartitions } from './fencing';
import { readConversation, readConversationFromSnapshot, storeSnapshot } from './read';
import { plainRules, useEventStoreDatabase } from './testing';

/** Snapshots of a conversation's fold: a reader starts from the latest one of its version and reads only what follows it. */
const db = useEventStoreDatabase();

const accepted = (id: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: id, messages: [id], subject: 's', sentAt: '2026-11-30T00:00:00.000Z' } },
});

async function conversationOf(key: string, inputs: number) {
  const epochs = await takePartitions(db.pool(), [0], 'snapshot-test');
  for (let i = 1; i <= inputs; i++) await appendToConversations(db.pool(), plainRules, 0, epochs, [{ conversation: key, probe: [] }], () => [accepted(`${key}-${i}`)]);
  return readConversation(db.pool(), key);
}

describe('snapshots', () => {
  it('without a snapshot the whole log is read; with one, the snapshot and only the events after it', async () => {
    const log = await conversationOf('snap/a', 5);
    expect(await readConversationFromSnapshot(db.pool(), 'snap/a', 1)).toEqual({ snapshot: null, events: log });

    await storeSnapshot(db.pool(), 'snap/a', { position: log[2].position, version: 1, fold: { folded: 3, text: 'a\ufffdb' } });
    expect(await readConversationFromSnapshot(db.pool(), 'snap/a', 1)).toEqual({
      snapshot: { position: log[2].position, version: 1, fold: { folded: 3, text: 'a\ufffdb' } },
      events: log.slice(3),
    });
    // A snapshot at the last event: nothing follows it.
    await storeSnapshot(db.pool(), 'snap/a', { position: log[4].position, version: 1, fold: { folded: 5 } });
    expect(await readConversationFromSnapshot(db.pool(), 'snap/a', 1)).toEqual({ snapshot: { position: log[4].position, version: 1, fold: { folded: 5 } }, events: [] });
  });

  it('a snapshot never replaces a later one of its version, and one of another version is ignored', async () => {
    const log = await conversationOf('snap/b', 4);
    await storeSnapshot(db.pool(), 'snap/b', { position: log[3].position, version: 1, fold: { folded: 4 } });
    await storeSnapshot(db.pool(), 'snap/b', { position: log[1].position, version: 1, fold: { folded: 2 } });
    expect((await readConversationFromSnapshot(db.pool(), 'snap/b', 1)).snapshot).toEqual({ position: log[3].position, version: 1, fold: { folded: 4 } });

    // Code of a newer fold reads the whole log, and its own snapshot then replaces the old one.
    expect(await readConversationFromSnapshot(db.pool(), 'snap/b', 2)).toEqual({ snapshot: null, events: log });
    await storeSnapshot(db.pool(), 'snap/b', { position: log[1].position, version: 2, fold: { v2: true } });
    expect(await readConversationFromSnapshot(db.pool(), 'snap/b', 2)).toEqual({ snapshot: { position: log[1].position, version: 2, fold: { v2: true } }, events: log.slice(2) });
    expect((await readConversationFromSnapshot(db.pool(), 'snap/b', 1)).snapshot).toBeNull();
  });
});
