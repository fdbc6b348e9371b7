import { describe, expect, it } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import type { ChatInput } from '@rudder/contracts';
import { readConversation, takePartitions } from '@rudder/event-store';
import { useEventStoreDatabase } from '@rudder/event-store/testing';
import { ingestInputs, type IngestAgents } from './ingest-inputs';

const db = useEventStoreDatabase();
const policy = { maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } };
const agents: IngestAgents = { defaultAgent: 'default', policyOf: () => policy, get: () => undefined, anyGuard: () => false };

let offset = 0;
const record = (input: ChatInput): KafkaMessage =>
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

    const { stored, rejected } = await ingestInputs(db.pool(), 0, epochs, batch, agents);

    expect(rejected).toEqual([{ message: batch[2], reason: expect.stringMatching(/^the database refused it: poison on purpose/) }]);
    expect(stored.flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []))).toEqual(['a-1', 'b-1', 'a-3']);
    const ids = async (conversation: string) =>
      (await readConversation(db.pool(), conversation)).flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []));
    expect(await ids('a')).toEqual(['a-1', 'a-3']);
    expect(await ids('b')).toEqual(['b-1']);
  });

  it('a record of a known conversation arriving on another partition does not move it there: it is returned to be re-routed (#9 hole 10)', async () => {
    const epochs = await takePartitions(db.pool(), [3, 4], 'worker-a');
    const ids = async (conversation: string) =>
      (await readConversation(db.pool(), conversation)).flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []));
    await ingestInputs(db.pool(), 3, epochs, [record(chat('m', 'm-1', 'first seen on 3'))], agents);

    // A producer with another partitioner: the conversation's next record lands on 4, beside a new conversation's.
    const strays = [record(chat('m', 'm-2', 'arrived on 4')), record(chat('n', 'n-1', 'new on 4'))];
    const { stored, conversations, misrouted } = await ingestInputs(db.pool(), 4, epochs, strays, agents);
    expect(misrouted).toEqual([{ message: strays[0], partition: 3 }]);
    expect(conversations).toEqual(['n']);
    expect(stored.flatMap((e) => (e.type === 'input.accepted' ? [e.data.input.id] : []))).toEqual(['n-1']);
    const { rows } = await db.pool().query(`SELECT key, partition FROM event_store.conversations WHERE key IN ('m', 'n') ORDER BY key`);
    expect(rows).toEqual([{ key: 'm', partition: 3 }, { key: 'n', partition: 4 }]);
    expect(await ids('m')).toEqual(['m-1']);

    // Re-routed to 3, it is ingested there, once.
    await ingestInputs(db.pool(), 3, epochs, [misrouted[0].message], agents);
    await ingestInputs(db.pool(), 3, epochs, [misrouted[0].message], agents);
    expect(await ids('m')).toEqual(['m-1', 'm-2']);
  });

  it('an idle conversation starts its next turn in the ingest\'s own transaction; a chat behind a running turn waits', async () => {
    const epochs = await takePartitions(db.pool(), [5], 'worker-a');
    const { stored } = await ingestInputs(db.pool(), 5, epochs, [record(chat('t', 't-1', 'first')), record(chat('t', 't-2', 'second'))], agents);
    expect(stored.map((e) => e.type)).toEqual(['conversation.opened', 'input.accepted', 'input.accepted', 'turn.started', 'input.delivered']);
    const started = stored.find((e) => e.type === 'turn.started');
    expect(started?.data).toMatchObject({ prompt: { id: 't-1' } });
    // One transaction: one commit time for all of them.
    expect(new Set(stored.map((e) => e.at)).size).toBe(1);
    const again = await ingestInputs(db.pool(), 5, epochs, [record(chat('t', 't-3', 'third'))], agents);
    expect(again.stored.map((e) => e.type)).toEqual(['input.accepted']);
  });
});
