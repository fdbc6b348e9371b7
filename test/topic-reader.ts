import { expect, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { createKafka } from '@rudder/runtime';
import { WAIT } from './system';

/** A record read back from a topic, with the partition and offset it was stored at. */
export type ReadRecord = { partition: number; offset: string; key: string | undefined; value: string; headers: Record<string, string> };

/**
 * Reads `topic` from the beginning, with a consumer group of its own, until `until` holds for
 * the records read so far whose key is `key`; then disconnects and returns them in order per
 * partition (a conversation's records share one partition, so: in order).
 */
export async function readTopic(brokers: string, topic: string, key: string, until: (records: ReadRecord[]) => boolean, timeoutMs = 30_000): Promise<ReadRecord[]> {
  const consumer = createKafka(brokers, 'test-topic-reader').consumer({ groupId: `test-reader-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 100 });
  const seen: ReadRecord[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        if (message.key?.toString() === key) seen.push(toRecord(partition, message));
      },
    });
    // An assertion: records that never come are what the test is about, not a failure of the test.
    return await vi.waitFor(() => {
      expect(until(seen), `the records of ${key} on ${topic} wanted (${seen.length} so far)`).toBe(true);
      return [...seen];
    }, { ...WAIT, timeout: timeoutMs });
  } finally {
    await consumer.disconnect();
  }
}

function toRecord(partition: number, message: KafkaMessage): ReadRecord {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) if (value !== undefined) headers[name] = value.toString();
  return { partition, offset: message.offset, key: message.key?.toString(), value: message.value?.toString() ?? '', headers };
}
