import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { ConversationEvent } from '@rudder/contracts';
import { ensureTopics, isRefusedByDatabase, keepConsuming, READER_SESSION, topicNames, type Config, type Log, type Pool } from '@rudder/runtime';
import { foldEvents } from './fold-events';
import { readEventRecord } from './read-event-record';

/** A bound on one transaction's size; a fetched batch larger than this is folded in slices. */
const MAX_EVENTS_PER_TRANSACTION = 500;

export type EventConsumer = { stop(): Promise<void> };

/**
 * Folds `agent.events` into the projections, from the beginning of the topic.
 *
 * Why `eachBatch` with manual offsets rather than `eachMessage`: a whole fetched batch (up to
 * MAX_EVENTS_PER_TRANSACTION records) is folded in ONE transaction, so the hot path costs a
 * handful of round trips per batch instead of per event. `autoCommit` is off and offsets are
 * resolved and committed by hand, only after that transaction has committed: a crash between
 * the two redelivers records whose ids are already in `applied_events`, which change nothing.
 * Nothing is ever committed ahead of the database.
 */
export async function consumeEvents(deps: { kafka: Kafka; pool: Pool; config: Config; log: Log }): Promise<EventConsumer> {
  const { kafka, pool, config, log } = deps;
  const topics = topicNames(config.KAFKA_NAMESPACE);
  await ensureTopics(kafka, topics, config.KAFKA_PARTITIONS);
  return keepConsuming({
    log,
    create: (): Consumer => kafka.consumer({ groupId: `${config.KAFKA_NAMESPACE}companion`, ...READER_SESSION }),
    async run(consumer) {
      consumer.on(consumer.events.CRASH, (e) =>
        log.error('the events consumer crashed', { error: String(e.payload.error), restart: e.payload.restart }),
      );
      await consumer.connect();
      await consumer.subscribe({ topic: topics.events, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, uncommittedOffsets, isRunning, isStale }) => {
          for (let from = 0; from < batch.messages.length; from += MAX_EVENTS_PER_TRANSACTION) {
            // After a rebalance or a seek the rest of this batch is not ours to fold.
            if (!isRunning() || isStale()) return;
            const slice = batch.messages.slice(from, from + MAX_EVENTS_PER_TRANSACTION);
            const events = readEvents(slice, { topic: batch.topic, partition: batch.partition }, log);
            await foldOrSkip(pool, events, log);
            resolveOffset(slice[slice.length - 1].offset);
            await commitOffsetsIfNecessary(uncommittedOffsets());
            await heartbeat();
          }
        },
      });
    },
  });
}

function readEvents(messages: KafkaMessage[], where: { topic: string; partition: number }, log: Log): ConversationEvent[] {
  const events: ConversationEvent[] = [];
  for (const message of messages) {
    const read = readEventRecord(message.value);
    if (read.ok) events.push(read.event);
    else
      log.warn('skipped a record of agent.events that does not parse', {
        ...where,
        offset: message.offset,
        key: message.key?.toString('utf8') ?? null,
        reason: read.reason,
      });
  }
  return events;
}

/**
 * An event that parses but that the database refuses (texts are made storable, so this is a
 * backstop for what nobody foresaw) would fail its batch on every redelivery and block the
 * partition. When a batch fails with such an
 * error, its events are folded one by one and the ones refused are logged and skipped.
 * Any other failure (the database is down) is thrown: kafkajs retries the batch, unresolved.
 */
async function foldOrSkip(pool: Pool, events: ConversationEvent[], log: Log): Promise<void> {
  try {
    await foldEvents(pool, events);
    return;
  } catch (error) {
    if (!isRefusedByDatabase(error)) throw error;
  }
  for (const event of events) {
    try {
      await foldEvents(pool, [event]);
    } catch (error) {
      if (!isRefusedByDatabase(error)) throw error;
      log.error('skipped an event the projections cannot hold', {
        id: event.id,
        conversation: event.conversation,
        position: event.position,
        type: event.type,
        error: String(error),
      });
    }
  }
}
