import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { shardMap } from '@rudder/runtime';
import type { ModelRequest } from '@rudder/scripted-model';
import { answered, startStack, type Stack } from './stack';
import { requestsAbout, testScript } from './scripts';

/**
 * Three PostgreSQL primaries (three databases of the run's server: as separate for the code as
 * three servers), one per partition of the stack's three: every row of a conversation — its
 * log, its outbox, its read models — is on its partition's primary and on no other, the epochs
 * of a partition are taken on its primary only, and a fork whose source is on another primary
 * reads it there and copies it into its own log, on its own. Checked by asking each database.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, databases: 3 });
});
afterAll(() => stack?.stop());

const PARTITIONS = 3; // startStack's KAFKA_PARTITIONS
/** Runs `sql` on each primary's database, shard 0 first. */
async function onEachPrimary<R extends pg.QueryResultRow>(sql: string): Promise<R[][]> {
  return Promise.all(
    stack.databaseUrls.map(async (url) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<R>(sql)).rows;
      } finally {
        await client.end();
      }
    }),
  );
}

/** Every text of a request's messages: what the model was sent. */
const sent = (request: ModelRequest) => request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

describe('several PostgreSQL primaries', () => {
  it("keep each conversation's log, outbox, epochs and read models on its partition's primary only; a fork reads its source on the source's primary", async () => {
    const shards = shardMap(stack.databaseUrls, PARTITIONS);
    expect(shards.urls).toHaveLength(3);
    // A conversation on each partition, so on each primary.
    const keys = [0, 1, 2].map((partition) => {
      for (let i = 0; ; i++) {
        const key = `primaries/${partition}-${Date.now()}-${i}`;
        if (shards.partitionOfKey(key) === partition) return key;
      }
    });
    for (const key of keys) await stack.client.chat(key, { text: `hello ${key}`, id: 'one' });
    const turns = await Promise.all(keys.map((key) => answered(stack.client, key, 'one')));
    expect(turns.map((turn) => turn.content)).toEqual(keys.map((key) => `answer to hello ${key}`));

    // A fork into a conversation on shard 2 from the one on shard 0.
    const into = (() => {
      for (let i = 0; ; i++) {
        const key = `primaries/fork-${Date.now()}-${i}`;
        if (shards.shardOfKey(key) === 2 && !keys.includes(key)) return key;
      }
    })();
    const forked = await stack.http.post(keys[0], '/fork', { into, atTurn: turns[0].id, id: 'f1' });
    expect({ status: forked.status, body: forked.body }).toEqual({ status: 201, body: { key: into, from: keys[0], atTurn: turns[0].id } });
    await stack.client.chat(into, { text: `in the fork ${into}`, id: 'c1' });
    await answered(stack.client, into, 'c1');
    const [request] = requestsAbout(stack.model.requests, `in the fork ${into}`);
    expect(sent(request)).toEqual(expect.arrayContaining([`hello ${keys[0]}`, `answer to hello ${keys[0]}`]));

    const expected = [[keys[0]], [keys[1]], [keys[2], into].sort()];
    const stored = await onEachPrimary<{ key: string; partition: number }>('SELECT key, partition FROM event_store.conversations ORDER BY key');
    expect(stored.map((rows) => rows.map((row) => row.key))).toEqual(expected);
    expect(stored.map((rows) => [...new Set(rows.map((row) => row.partition))])).toEqual([[0], [1], [2]]);
    const logged = await onEachPrimary<{ conversation: string }>('SELECT DISTINCT conversation FROM event_store.events ORDER BY conversation');
    expect(logged.map((rows) => rows.map((row) => row.conversation))).toEqual(expected);
    // The fork's copy of its source is in its own log, on its own primary; the source's log is untouched by it.
    const forkEvents = await onEachPrimary<{ type: string }>(`SELECT type FROM event_store.events WHERE conversation = '${into}' ORDER BY position`);
    expect(forkEvents[2].map((row) => row.type)).toContain('conversation.forked');
    expect([forkEvents[0], forkEvents[1]]).toEqual([[], []]);
    const epochs = await onEachPrimary<{ partition: number }>('SELECT partition FROM event_store.partition_owners ORDER BY partition');
    expect(epochs.map((rows) => rows.map((row) => row.partition))).toEqual([[0], [1], [2]]);
    // The companion folded each conversation into its primary's read models.
    const folded = await onEachPrimary<{ key: string }>('SELECT key FROM companion.conversations ORDER BY key');
    expect(folded.map((rows) => rows.map((row) => row.key))).toEqual(expected);
    // Everything stored was published (each primary's relay marked its own outbox).
    await expect.poll(async () => (await onEachPrimary<{ n: number }>('SELECT count(*)::int AS n FROM event_store.outbox')).map(([row]) => row.n), { timeout: 10_000 }).toEqual([0, 0, 0]);
  });
});
