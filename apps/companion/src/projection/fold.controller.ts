import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { KafkaMessage } from 'kafkajs';
import { Topics, type ConversationEvent } from '@rudder/contracts';
import { contextOf, createKafka, isRefusedByDatabase, KafkaBatchServer, READER_SESSION, SpanKind, tracerOf, tracing, type Config, type Log, type PartitionBatch } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { READ_MODELS } from '../read-models/data-source';
import { performance } from 'node:perf_hooks';
import { CompanionMetrics } from '../metrics/companion-metrics';
import { foldEvents, type FoldResult } from './fold-events';
import { readEventRecord } from './read-event-record';

/** A bound on one transaction's size; a fetched batch larger than this is folded in slices. */
const MAX_EVENTS_PER_TRANSACTION = 500;

/** The companion's log (Nest token). */
export const LOG = Symbol('companion.log');

/**
 * The companion's consumer of `agent.events`, from the beginning of the topic, as a Nest
 * microservice transport. Each slice of a fetched batch (up to MAX_EVENTS_PER_TRANSACTION
 * records) is folded in ONE transaction, so the hot path costs a handful of round trips per
 * batch instead of per event; its offsets are committed only after that transaction has
 * committed. A crash between the two redelivers records whose ids are already in
 * `applied_events`, which change nothing. Nothing is ever committed ahead of the database.
 */
export const companionTransport = (config: Config, log: Log): KafkaBatchServer =>
  new KafkaBatchServer({
    kafka: createKafka(config.KAFKA_BROKERS, 'companion', log),
    topics: [Topics.events],
    namespace: config.KAFKA_NAMESPACE,
    consumer: { groupId: `${config.KAFKA_NAMESPACE}companion`, ...READER_SESSION },
    maxBatchSize: MAX_EVENTS_PER_TRANSACTION,
    log,
  });

/** Folds each batch of agent.events into the projections. */
@Controller()
export class FoldController {
  constructor(
    @Inject(READ_MODELS) private readonly readModels: DataSource,
    @Inject(LOG) private readonly log: Log,
    @Inject(CompanionMetrics) private readonly metrics: CompanionMetrics,
  ) {}

  @EventPattern(Topics.events)
  async fold(@Payload() batch: PartitionBatch): Promise<void> {
    const start = performance.now();
    const events = readEvents(batch.messages, batch, this.log);
    const spans = foldSpans(batch.messages);
    try {
      const result = await foldOrSkip(this.readModels, events, this.log);
      this.metrics.batchFolded(events, result, (performance.now() - start) / 1000);
    } finally {
      for (const span of spans) span.end();
    }
  }
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
async function foldOrSkip(readModels: DataSource, events: ConversationEvent[], log: Log): Promise<FoldResult> {
  try {
    return await foldEvents(readModels, events);
  } catch (error) {
    if (!isRefusedByDatabase(error)) throw error;
  }
  const total: FoldResult = { applied: 0, duplicates: 0 };
  for (const event of events) {
    try {
      const one = await foldEvents(readModels, [event]);
      total.applied += one.applied;
      total.duplicates += one.duplicates;
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
  return total;
}

const tracer = tracerOf('companion');

/** A `fold` span in each trace the batch's records carry (`traceparent`, from the outbox publication); none when tracing is off. */
function foldSpans(messages: readonly KafkaMessage[]) {
  if (!tracing()) return [];
  const parents = new Set(messages.map((m) => m.headers?.traceparent?.toString()).filter((t): t is string => Boolean(t)));
  return [...parents].map((parent) => tracer.startSpan('fold', { kind: SpanKind.CONSUMER, attributes: { 'messaging.system': 'kafka', 'rudder.events': messages.length } }, contextOf(parent)));
}

