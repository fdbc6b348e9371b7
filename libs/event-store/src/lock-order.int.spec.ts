import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { appendToConversations } from './append-to-conversations';
import { byKeyBytes, type StreamRules } from './writes';
import { takePartitions } from './fencing';
import { readConversation } from './read';
import { useEventStoreDatabase } from './testing';

/**
 * Every write of several conversations locks their rows in one order, whatever the database's
 * collation: bytes (`COLLATE "C"`), in SQL and in JavaScript alike. On a database whose default
 * collation is ICU `en-US` (as one made by a locale-aware initdb, the docker-compose one), an
 * order by the column's collation and one by JavaScript's sort disagree (`lock-a` / `lock-B`:
 * en-US puts lower case first, bytes put upper case first; `｡` / `😀`: UTF-16 code units put the
 * emoji's surrogates first, bytes put it last), and two writers taking the same rows in
 * opposite orders deadlock.
 */
const db = useEventStoreDatabase({ icuLocale: 'en-US' });

/** The state is how many events the conversation holds. */
const countingRules: StreamRules<number> = {
  parse: (stored) => (typeof stored === 'number' ? stored : 0),
  evolve: (count) => count + 1,
  onceKey: (event) => `${event.type}:${JSON.stringify(event.data)}`,
  hasOpenWork: () => false,
};
const decidedOn = (count: number, label: string): DomainEvent[] => [
  { type: 'model.replied', data: { turn: label, step: count, content: label, toolCalls: [] } } as DomainEvent,
];

async function waitingForLocks(): Promise<number> {
  const { rows } = await db.pool().query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`);
  return rows[0].n;
}

/**
 * The sessions waiting for a lock, and how many of them are not settled in that wait: woken
 * (nobody blocks them any more) or still blocked by the session `released`.
 */
async function waitingFor(released: number): Promise<{ waiting: number; unsettled: number }> {
  const { rows } = await db.pool().query<{ waiting: number; unsettled: number }>(
    `SELECT count(*)::int AS waiting,
            count(*) FILTER (WHERE cardinality(pg_blocking_pids(pid)) = 0 OR $1 = ANY(pg_blocking_pids(pid)))::int AS unsettled
       FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    [released],
  );
  return rows[0];
}

describe('lock order on a database whose collation is ICU en-US', () => {
  it('the database really compares these keys otherwise than by bytes (so the test below means something)', async () => {
    const { rows } = await db.pool().query<{ collated: string[]; bytes: string[] }>(
      `SELECT (SELECT array_agg(k ORDER BY k) FROM unnest($1::text[]) k) AS collated,
              (SELECT array_agg(k ORDER BY k COLLATE "C") FROM unnest($1::text[]) k) AS bytes`,
      [['lock-B', 'lock-a']],
    );
    expect(rows[0]).toEqual({ collated: ['lock-a', 'lock-B'], bytes: ['lock-B', 'lock-a'] });
  });

  it.each([
    ['upper and lower case', 'lock-a', 'lock-B', 40],
    ['a character past the surrogates and one above the BMP', 'lock-\uFF61', 'lock-\u{1F600}', 41],
  ])(
    'an ingest transaction and a one-statement write of the same two conversations (%s), each waiting for its first lock, both commit: neither deadlocks',
    async (_what, first, second, partition) => {
      const keys = [first, second];
      const epochs = await takePartitions(db.pool(), [partition], 'lock-order-test');
      const created = await appendToConversations(db.pool(), countingRules, partition, epochs, keys.map((conversation) => ({ conversation, probe: [] })), (_c, count) => decidedOn(count, 'first'));
      const last = new Map(created.stored.map((e) => [e.conversation, e.position]));

      // Two other sessions hold one row each, so that each writer is made to wait for its first
      // lock, whichever row that is. Taken in one order, the second writer waits for the first
      // to commit.
      const holders = await Promise.all(keys.map(() => db.pool().connect()));
      try {
        for (const [i, holder] of holders.entries()) {
          await holder.query('BEGIN');
          await holder.query('SELECT 1 FROM event_store.conversations WHERE key = $1 FOR UPDATE', [keys[i]]);
        }
        // An ingested batch the worker does not hold: the transaction.
        const ingest = appendToConversations(db.pool(), countingRules, partition, epochs, keys.map((conversation) => ({ conversation, probe: [] })), (c, count) => decidedOn(count, `${c} ingest`));
        await expect.poll(waitingForLocks).toBe(1);
        // An ingested batch the worker holds as of each one's last event: the one statement.
        const held = appendToConversations(
          db.pool(), countingRules, partition, epochs,
          [...keys].reverse().map((conversation) => ({ conversation, probe: [] })),
          (c, count) => decidedOn(count, `${c} held`),
          (c) => ({ position: last.get(c)!, state: 1 }),
        );
        await expect.poll(waitingForLocks).toBe(2);
        // Released one at a time, the row the byte order locks second first: a writer that took
        // the other order has it now and waits for the other row, which the other writer
        // waited for first (so a deadlock is certain, not a race between the two releases);
        // writers in the byte order both still wait for that row.
        const later = keys.indexOf([...keys].sort(byKeyBytes)[1]);
        const pid = (await holders[later].query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        await holders[later].query('COMMIT');
        // Each writer waits again, for a session that holds what it waits for: a writer that
        // was woken and has not asked again (its lock no one's) does not count.
        await expect.poll(() => waitingFor(pid)).toEqual({ waiting: 2, unsettled: 0 });
        await holders[1 - later].query('COMMIT');
        const outcomes = await Promise.allSettled([ingest, held]);
        expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'stored'))).toEqual(['stored', 'stored']);
      } finally {
        for (const holder of holders) {
          await holder.query('ROLLBACK').catch(() => undefined);
          holder.release();
        }
      }
      for (const conversation of keys) {
        const turns = (await readConversation(db.pool(), conversation)).map((e) => (e.data as { turn: string }).turn);
        expect(turns.slice(0, 1)).toEqual(['first']);
        expect(turns.slice(1).sort()).toEqual([`${conversation} held`, `${conversation} ingest`]);
      }
    },
  );
});
