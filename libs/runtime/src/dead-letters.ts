import type { KafkaMessage, Message, Producer } from 'kafkajs';

/** A dead letter's reason header is cut to this many characters (it names at most a few issues). */
export const MAX_REASON_CHARS = 2000;
/** A record dead-lettered without its value keeps its key up to this size. */
const MAX_DROPPED_KEY_BYTES = 1024;

/** A record a consumer cannot read, and why. */
export type Rejected = { message: KafkaMessage; reason: string };

/**
 * Dead-letters records of `source` (one partition of one topic) to `dlqTopic`, one record each,
 * unchanged (key, value), with headers `reason` (at most MAX_REASON_CHARS), `source-topic`,
 * `source-partition` and `source-offset`. Use a producer of its own (not idempotent, so a
 * refused dead letter never touches another producer's sequence). A record the broker refuses
 * whole (too large once the headers are added) goes again without its value, with a `dropped`
 * header saying so; only an outage, which a redelivery survives, throws: the caller commits the
 * source offsets only after this resolved. Used for `agent.inputs` (the turn worker) and
 * `agent.events` (the companion).
 */
export async function deadLetter(
  producer: Producer,
  dlqTopic: string,
  source: { topic: string; partition: number },
  rejected: readonly Rejected[],
): Promise<void> {
  for (const { message, reason } of rejected) {
    const headers = {
      reason: reason.slice(0, MAX_REASON_CHARS),
      'source-topic': source.topic,
      'source-partition': String(source.partition),
      'source-offset': message.offset,
    };
    const send = (record: Message) => producer.send({ topic: dlqTopic, acks: -1, messages: [record] });
    await send({ key: message.key, value: message.value, headers }).catch(() =>
      send({
        key: message.key && message.key.length <= MAX_DROPPED_KEY_BYTES ? message.key : null,
        value: null,
        headers: { ...headers, dropped: `the record (${message.value?.length ?? 0} bytes of value, ${message.key?.length ?? 0} of key) was too large to dead-letter whole` },
      }),
    );
  }
}
