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
});
