import { describe, expect, it, vi } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { appendToConversation } from './append-to-conversation';
import { appendToConversations } from './append-to-conversations';
import { FencedError, MovedPartitionError, takePartitions } from './fencing';
import type { PoolClient } from '@rudder/runtime';
import { readConversation } from './read';
import { plainRules, useEventStoreDatabase } from './testing';

const db = useEventStoreDatabase();

const chat = (id: string): DomainEvent => ({
  type: 'input.accepted',
  data: { input: { id, kind: 'chat', text: id, messages: [id], subject: 's', sentAt: '2026-11-30T00:00:00.000Z' } },
});

describe('fencing by partition epochs', () => {
  it('a writer whose partition was taken by another commits nothing, in a turn or in a batch', async () => {
    const first = await takePartitions(db.pool(), [0, 1], 'worker-a');
    await appendToConversations(db.pool(), plainRules, 0, first, [{ conversation: 'c', probe: [] }], () => [chat('one')]);

    const second = await takePartitions(db.pool(), [0], 'worker-b');
    expect(second.get(0)).toBe(first.get(0)! + 1);

    await expect(appendToConversation(db.pool(), plainRules, 'c', first, () => [chat('zombie turn write')])).rejects.toBeInstanceOf(FencedError);
    await expect(appendToConversations(db.pool(), plainRules, 0, first, [{ conversation: 'c', probe: [] }], () => [chat('zombie batch')])).rejects.toBeInstanceOf(
      FencedError,
    );
    expect((await readConversation(db.pool(), 'c')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['one']);

    await appendToConversation(db.pool(), plainRules, 'c', second, () => [chat('two')]);
    expect((await readConversation(db.pool(), 'c')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['one', 'two']);
  });

  it('a writer that never took the partition is fenced too', async () => {
    await expect(appendToConversations(db.pool(), plainRules, 5, new Map(), [{ conversation: 'd', probe: [] }], () => [chat('x')])).rejects.toBeInstanceOf(FencedError);
  });

  it('taking an epoch waits for a write in flight under the old one', async () => {
    const epochs = await takePartitions(db.pool(), [2], 'worker-a');
    // A write in flight holds the partition's row in share mode, as appendToConversation does.
    const writer = await db.pool().connect();
    await writer.query('BEGIN');
    await writer.query('SELECT 1 FROM event_store.partition_owners WHERE partition = 2 FOR SHARE');
    let taken = false;
    const takeover = takePartitions(db.pool(), [2], 'worker-b').then((e) => ((taken = true), e));
    // Wait until the takeover is blocked on the writer's lock (an event, not a time).
    await vi.waitFor(async () => {
      const { rows } = await db.pool().query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      expect(rows[0].n).toBeGreaterThan(0);
    });
    expect(taken).toBe(false);
    await writer.query('COMMIT');
    writer.release();
    expect((await takeover).get(2)).toBe(epochs.get(2)! + 1);
  });

  it('a partition kept across a rebalance keeps its epoch: the writes in flight under it still commit', async () => {
    const before = await takePartitions(db.pool(), [10, 11], 'worker-a');
    await appendToConversations(db.pool(), plainRules, 10, before, [{ conversation: 'kept', probe: [] }], () => [chat('k1')]);
    // A rebalance: worker-a keeps 10, loses 11, gains 12.
    const after = await takePartitions(db.pool(), [10, 12], 'worker-a', before);
    expect(after.get(10)).toBe(before.get(10));
    expect(after.has(11)).toBe(false);
    expect(after.get(12)).toBe(1);
    // A turn's commit that started under the previous assignment is not fenced.
    await appendToConversation(db.pool(), plainRules, 'kept', before, () => [chat('k2')]);
    expect((await readConversation(db.pool(), 'kept')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['k1', 'k2']);
  });

  it('a partition someone else took in between gets a new epoch, even if this owner had it before and has it again', async () => {
    const first = await takePartitions(db.pool(), [13], 'worker-a');
    // worker-a missed a generation (paused past its session timeout): worker-b owned 13 meanwhile.
    const other = await takePartitions(db.pool(), [13], 'worker-b');
    const again = await takePartitions(db.pool(), [13], 'worker-a', first);
    expect(again.get(13)).toBe(other.get(13)! + 1);
    await expect(appendToConversations(db.pool(), plainRules, 13, other, [{ conversation: 'taken', probe: [] }], () => [chat('b')])).rejects.toBeInstanceOf(FencedError);
    // And an epoch held from before is not kept if the row moved on, even back to the same owner name.
    const stale = new Map([[13, first.get(13)!]]);
    expect((await takePartitions(db.pool(), [13], 'worker-a', stale)).get(13)).toBe(again.get(13)! + 1);
  });

  it('a zombie paused inside its commit (holding the share lock) fails; its successor gets the epoch', async () => {
    const zombieEpochs = await takePartitions(db.pool(), [20], 'zombie');
    await appendToConversations(db.pool(), plainRules, 20, zombieEpochs, [{ conversation: 'z', probe: [] }], () => [chat('z1')]);
    // The zombie's next commit stops (a SIGSTOP, a GC pause, a cut-off network) after it took
    // the locks — the conversation's row and the owner row in share mode — before its insert.
    let paused!: () => void;
    const reachedPause = new Promise<void>((resolve) => (paused = resolve));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    const pool = db.pool();
    const connect = pool.connect.bind(pool);
    vi.spyOn(pool, 'connect').mockImplementationOnce(async () => {
      const client = await connect();
      return new Proxy(client, {
        get(target: PoolClient, property) {
          if (property !== 'query') return Reflect.get(target, property, target);
          return async (query: string | { text: string }, values?: unknown[]) => {
            if ((typeof query === 'string' ? query : query.text).includes('INSERT INTO event_store.events')) {
              paused();
              await resumed;
            }
            return target.query(query as string, values);
          };
        },
      });
    });
    const zombie = appendToConversation(pool, plainRules, 'z', zombieEpochs, () => [chat('zombie write')]).then(
      () => 'committed',
      (error: unknown) => error,
    );
    await reachedPause;

    // The successor's epoch update is not stalled for as long as the pause lasts.
    const successor = await takePartitionsRetrying(pool, 20, 'successor');
    expect(successor).toBe(zombieEpochs.get(20)! + 1);
    resume();
    expect(await zombie).not.toBe('committed');
    expect((await readConversation(pool, 'z')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['z1']);
    await appendToConversation(pool, plainRules, 'z', new Map([[20, successor]]), () => [chat('z2')]);
  });

  it('a partition moved to another primary (moved_to, as growing the primaries marks it) is never taken here again, and its old epoch writes nothing', async () => {
    const before = await takePartitions(db.pool(), [30, 31], 'worker-on-the-old-map');
    await appendToConversations(db.pool(), plainRules, 30, before, [{ conversation: 'm', probe: [] }], () => [chat('m1')]);
    // What scripts/primaries-growth.ts does to fence a moving partition on its old primary.
    await db.pool().query(`UPDATE event_store.partition_owners SET epoch = epoch + 1, owner = 'grow-primaries', moved_to = 2 WHERE partition = 30`);

    await expect(appendToConversation(db.pool(), plainRules, 'm', before, () => [chat('m2')])).rejects.toBeInstanceOf(FencedError);
    await expect(appendToConversations(db.pool(), plainRules, 30, before, [{ conversation: 'n', probe: [] }], () => [chat('n1')])).rejects.toBeInstanceOf(FencedError);
    // Taking it again, alone or with others, or keeping it as held, is refused whole: nothing taken.
    for (const [partitions, held] of [[[30], new Map()], [[30, 31], before], [[31, 30], new Map()]] as const) {
      const refused = await takePartitions(db.pool(), partitions, 'worker-on-the-old-map', held).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(MovedPartitionError);
      expect((refused as MovedPartitionError).moved).toEqual([[30, 2]]);
      expect(String(refused)).toMatch(/partition 30 was moved to shard 2 .*restart it with the new DATABASE_URLS/);
    }
    const { rows } = await db.pool().query<{ partition: number; epoch: string; owner: string }>('SELECT partition, epoch, owner FROM event_store.partition_owners WHERE partition IN (30, 31) ORDER BY partition');
    expect(rows.map((r) => [r.partition, Number(r.epoch), r.owner])).toEqual([
      [30, before.get(30)! + 1, 'grow-primaries'],
      [31, before.get(31)!, 'worker-on-the-old-map'],
    ]);
    expect((await readConversation(db.pool(), 'm')).map((e) => e.type === 'input.accepted' && e.data.input.id)).toEqual(['m1']);
  });
});

/** What the worker's assignment handler does: retry while taking the epoch gives up on a lock. */
async function takePartitionsRetrying(pool: ReturnType<typeof db.pool>, partition: number, owner: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await takePartitions(pool, [partition], owner)).get(partition)!;
    } catch (error) {
      if (attempt >= 10) throw error;
    }
  }
}
