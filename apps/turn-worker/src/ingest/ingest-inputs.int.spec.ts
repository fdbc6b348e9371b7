import { describe, expect, it } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import type { ChatInput, InputRecord } from '@rudder/contracts';
import { readConversation, takePartitions, type Epochs } from '@rudder/event-store';
import { useEventStoreDatabase } from '@rudder/event-store/testing';
import { oneShard, shardMap, sharded } from '@rudder/runtime';
import { InputIngest, type GuardFailure, type IngestAgents } from './ingest-inputs';

const db = useEventStoreDatabase();
const policy = { maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } };
const agents: IngestAgents = { defaultAgent: 'default', policyOf: () => policy, get: () => undefined, anyGuard: () => false };
/** The ingest of a worker holding `epochs`. */
const ingest = (epochs: Epochs, withAgents: IngestAgents = agents, guardFailed?: (failure: GuardFailure) => void) =>
  new InputIngest({ pools: oneShard(db.pool(), 16), epochs: () => epochs, agents: withAgents, guardFailed });

let offset = 0;
const record = (input: InputRecord): KafkaMessage =>
  ({ key: Buffer.from(input.conversation), value: Buffer.from(JSON.stringify(input)), offset: String(offset++), headers: {} }) as KafkaMessage;
const chat = (conversation: string, id: string, text: string): ChatInput => ({
  v: 1, type: 'chat', id, conversation, subject: 'someone', messages: [text], onBusy: 'enqueue', sentAt: '2026-12-01T00:00:00.000Z',
});

describe('ingesting a batch', () => {
  it('a record the database refuses is rejected with its reason and the rest of its batch is stored, in order', async () => {
    // Poison delivered on purpose: the database itself refuses any input whose text says so,
    // as it would refuse something the schemas did not foresee.
    await db.pool().query(`
      CREATE FUNCTION event_store.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.data::text LIKE '%refuse me%' THEN RAISE EXCEPTION 'poison on purpose' USING ERRCODE = '22023'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_poison BEFORE INSERT ON event_store.events FOR EACH ROW EXECUTE FUNCTION event_store.refuse_poison();`);
    const epochs = await takePartitions(db.pool(), [0], 'worker-a');
    const batch = [
      record(chat('a', 'a-1', 'first')),
      record(chat('b', 'b-1', 'other conversation')),
      record(chat('a', 'a-2', 'refuse me')),
      record(chat('a', 'a-3', 'after the poison')),
    ];

    const { stored, rejected } = await ingest(epochs).batch(0, batch);

    expect(rejected).toEqual([{ message: batch[2], reason: expect.stringMatching(/^the database refused it: poison on purpose/) }]);
    expect(stored.flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []))).toEqual(['a-1', 'b-1', 'a-3']);
    const ids = async (conversation: string) =>
      (await readConversation(db.pool(), conversation)).flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []));
    expect(await ids('a')).toEqual(['a-1', 'a-3']);
    expect(await ids('b')).toEqual(['b-1']);
  });

  it('a record of a known conversation arriving on another partition does not move it there: it is returned to be re-routed', async () => {
    const epochs = await takePartitions(db.pool(), [3, 4], 'worker-a');
    const ids = async (conversation: string) =>
      (await readConversation(db.pool(), conversation)).flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []));
    await ingest(epochs).batch(3, [record(chat('m', 'm-1', 'first seen on 3'))]);

    // A producer with another partitioner: the conversation's next record lands on 4, beside a new conversation's.
    const strays = [record(chat('m', 'm-2', 'arrived on 4')), record(chat('n', 'n-1', 'new on 4'))];
    const { stored, conversations, misrouted } = await ingest(epochs).batch(4, strays);
    expect(misrouted).toEqual([{ message: strays[0], partition: 3 }]);
    expect(conversations).toEqual(['n']);
    expect(stored.flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []))).toEqual(['n-1']);
    const { rows } = await db.pool().query(`SELECT key, partition FROM event_store.conversations WHERE key IN ('m', 'n') ORDER BY key`);
    expect(rows).toEqual([{ key: 'm', partition: 3 }, { key: 'n', partition: 4 }]);
    expect(await ids('m')).toEqual(['m-1']);

    // Re-routed to 3, it is ingested there, once.
    await ingest(epochs).batch(3, [misrouted[0].message]);
    await ingest(epochs).batch(3, [misrouted[0].message]);
    expect(await ids('m')).toEqual(['m-1', 'm-2']);
  });

  it("with several primaries, a record whose key is another primary's is not read here: it is returned to be re-routed to its key's partition", async () => {
    // Three primaries over 12 partitions (0-3, 4-7, 8-11), all three this one database: which
    // one a record is stored on is only the map's choice, and nothing is stored for the strays.
    const map = shardMap(['postgres://a/db', 'postgres://b/db', 'postgres://c/db'], 12);
    const keyOn = (shard: number, name: string) => {
      for (let i = 0; ; i++) if (map.shardOfKey(`${name}-${i}`) === shard) return `${name}-${i}`;
    };
    const [here, there] = [keyOn(0, 'here'), keyOn(2, 'there')];
    const epochs = await takePartitions(db.pool(), [1], 'worker-a');
    const batch = [record(chat(there, 't-1', 'its key is on the third primary')), record(chat(here, 'h-1', 'its key is on this one'))];
    const three = new InputIngest({ pools: sharded(map, [db.pool(), db.pool(), db.pool()]), epochs: () => epochs, agents });
    const { stored, conversations, misrouted } = await three.batch(1, batch);
    expect(misrouted).toEqual([{ message: batch[0], partition: map.partitionOfKey(there) }]);
    expect(map.shardOf(misrouted[0].partition)).toBe(2);
    expect(conversations).toEqual([here]);
    expect(stored.flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []))).toEqual(['h-1']);
    expect(await readConversation(db.pool(), there)).toEqual([]);
  });

  it('an idle conversation starts its next turn in the ingest\'s own transaction; a chat behind a running turn waits', async () => {
    const epochs = await takePartitions(db.pool(), [5], 'worker-a');
    const { stored } = await ingest(epochs).batch(5, [record(chat('t', 't-1', 'first')), record(chat('t', 't-2', 'second'))]);
    expect(stored.map((e) => e.type)).toEqual(['conversation.opened', 'input.accepted', 'input.accepted', 'turn.started', 'input.delivered']);
    const started = stored.find((e) => e.type === 'turn.started');
    expect(started?.data).toMatchObject({ prompt: { id: 't-1' } });
    // One transaction: one commit time for all of them.
    expect(new Set(stored.map((e) => e.at)).size).toBe(1);
    const again = await ingest(epochs).batch(5, [record(chat('t', 't-3', 'third'))]);
    expect(again.stored.map((e) => e.type)).toEqual(['input.accepted']);
  });

  it('two conversations whose inputs share an id each get their own guard verdict, not each other\'s refusal', async () => {
    const epochs = await takePartitions(db.pool(), [6], 'worker-a');
    const guarding: IngestAgents = {
      ...agents,
      anyGuard: () => true,
      get: () => ({ name: 'default', guardTimeoutMs: 1000, guard: async ({ text }) => (text.includes('card 4111') ? { refuse: 'no card numbers' } : null) }),
    };
    // Ids are the client's choice: two clients both call their first chat "1".
    const batch = [record(chat('g-alice', '1', 'my card 4111 1111 1111 1111')), record(chat('g-bob', '1', 'hello'))];

    const { stored } = await ingest(epochs, guarding).batch(6, batch);

    const decisions = stored.flatMap((e) =>
      e.type === 'input.accepted' ? [[e.conversation, 'accepted']] : e.type === 'input.rejected' ? [[e.conversation, e.data.code]] : [],
    );
    expect(decisions).toEqual([['g-alice', 'refused'], ['g-bob', 'accepted']]);
  });

  it("the guard checks an edit's new text as a message of the edited input's kind: what it refuses changes nothing", async () => {
    const epochs = await takePartitions(db.pool(), [8], 'worker-a');
    const seen: [string, string][] = [];
    const guarding: IngestAgents = {
      ...agents,
      anyGuard: () => true,
      get: () => ({
        name: 'default',
        guardTimeoutMs: 1000,
        guard: async ({ kind, text }) => {
          seen.push([kind, text]);
          return text.includes('card 4111') ? { refuse: 'no card numbers' } : null;
        },
      }),
    };
    // The first chat starts a turn; the second waits behind it.
    await ingest(epochs, guarding).batch(8, [record(chat('ge', 'ge-1', 'first')), record(chat('ge', 'ge-2', 'second'))]);
    const edit = (id: string, text: string): InputRecord => ({ v: 1, type: 'edit', id, conversation: 'ge', subject: 'someone', target: 'ge-2', to: { text }, sentAt: '2026-12-01T00:00:00.000Z' });
    const { stored } = await ingest(epochs, guarding).batch(8, [record(edit('ed-1', 'my card 4111 1111 1111 1111')), record(edit('ed-2', 'second, edited'))]);
    expect(seen.slice(2)).toEqual([['chat', 'my card 4111 1111 1111 1111'], ['chat', 'second, edited']]);
    expect(stored.map((e) => (e.type === 'edit.refused' ? [e.type, e.data.code] : [e.type]))).toEqual([['edit.refused', 'refused'], ['input.edited']]);
    const { rows } = await db.pool().query(`SELECT head->'queue' AS queue FROM event_store.conversations WHERE key = 'ge'`);
    expect(rows[0].queue).toMatchObject([{ id: 'ge-2', text: 'second, edited', revision: 1 }]);
  });

  it('a guard that throws or hangs past its budget decides nothing for its input (guard.failed), the rest of the batch is decided, and the same id sent again is guarded again', async () => {
    const epochs = await takePartitions(db.pool(), [7], 'worker-a');
    let failing = true;
    const guarding: IngestAgents = {
      ...agents,
      anyGuard: () => true,
      get: () => ({
        name: 'default',
        guardTimeoutMs: 50,
        guard: ({ text, signal }) => {
          if (failing && text === 'throw') return Promise.reject(new Error('the moderation service is down'));
          // Waits until its budget is spent (the ingest aborts it), never answering before.
          if (failing && text === 'hang') return new Promise((resolve) => signal.addEventListener('abort', () => setTimeout(resolve, 10, null)));
          return Promise.resolve(null);
        },
      }),
    };
    const failures: GuardFailure[] = [];
    const batch = [record(chat('h-1', 'x', 'throw')), record(chat('h-2', 'y', 'hang')), record(chat('h-3', 'z', 'fine'))];

    const first = await ingest(epochs, guarding, (f) => failures.push(f)).batch(7, batch);

    const decided = (events: typeof first.stored) =>
      events.flatMap((e) => (e.type === 'input.accepted' ? [[e.data.input.id, 'accepted']] : e.type === 'guard.failed' ? [[e.data.input.id, 'guard.failed']] : []));
    expect(decided(first.stored)).toEqual([['x', 'guard.failed'], ['y', 'guard.failed'], ['z', 'accepted']]);
    expect(failures.map((f) => [f.input, f.reason])).toEqual([['x', 'error'], ['y', 'timeout']]);
    expect(failures[0].error).toContain('the moderation service is down');
    const failed = first.stored.find((e) => e.type === 'guard.failed');
    // The guard's own error stays in the worker's log; the input's answer only says the guard failed.
    expect(failed?.data).toMatchObject({ message: expect.stringMatching(/input guard of agent default failed/) });
    expect(JSON.stringify(failed)).not.toContain('moderation');

    // Sent again (a retry with the same id): guarded again, twice failing, then accepted once.
    const again = await ingest(epochs, guarding).batch(7, [record(chat('h-1', 'x', 'throw'))]);
    expect(decided(again.stored)).toEqual([['x', 'guard.failed']]);
    failing = false;
    const retried = await ingest(epochs, guarding).batch(7, [record(chat('h-1', 'x', 'throw')), record(chat('h-2', 'y', 'hang'))]);
    expect(decided(retried.stored)).toEqual([['x', 'accepted'], ['y', 'accepted']]);
    const log = await readConversation(db.pool(), 'h-1');
    expect(log.map((e) => e.type)).toEqual(['guard.failed', 'guard.failed', 'conversation.opened', 'input.accepted', 'turn.started', 'input.delivered']);
    // Answered now: a redelivery of the id adds nothing.
    const redelivered = await ingest(epochs, guarding).batch(7, [record(chat('h-1', 'x', 'throw'))]);
    expect(redelivered.stored).toEqual([]);
  });
});
