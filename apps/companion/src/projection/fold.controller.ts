import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { KafkaMessage } from 'kafkajs';
import { Topics, type ConversationEvent } from '@rudder/contracts';
import { contextOf, createKafka, grouped, hop, isRefusedByDatabase, KafkaBatchServer, READER_SESSION, SpanKind, tracerOf, tracing, type Config, type Log, type PartitionBatch, type Rejected } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { READ_MODELS, type ReadModels } from '../read-models/data-source';
import { performance } from 'node:perf_hooks';
import { CompanionMetrics } from '../metrics/companion-metrics';
import { isKnownEvent } from './conversation-state';
import { DEAD_LETTERS, type EventDeadLetters } from './dead-letters';
import { foldEvents, type FoldResult } from './fold-events';
import { FoldedPositions } from './folded-positions';
import { readEventRecord } from './read-event-record';

/** A bound on one transaction's size; a fetched batch larger than this is folded in slices, and slices are folded together up to it. */
const MAX_EVENTS_PER_TRANSACTION = 500;

/** The companion's log (Nest token). */
export const LOG = Symbol('companion.log');

/**
 * The companion's consumer of `agent.events`, from the beginning of the topic, as a Nest
 * microservice transport. Every partition's batches are handled at once, and the slices (up to
 * MAX_EVENTS_PER_TRANSACTION records each) handed over together — one fetch's partitions, or
 * what came while the previous fold ran — are folded in ONE transaction (`grouped`), so the hot
 * path costs a handful of round trips per fetch instead of per event or per partition; a
 * slice's offsets are committed only after that transaction has committed, at most once a
 * second. A crash between the two redelivers records (up to a
 * second of them) already folded (their copies are in `companion.events`), which change nothing. Nothing is ever committed ahead of the database.
 * A record that does not parse, or an event the projections cannot hold, is dead-lettered to
 * `agent.events.dlq` before the offsets are committed, and the partition moves on.
 */
export const companionTransport = (config: Config, log: Log): KafkaBatchServer =>
  new KafkaBatchServer({
    kafka: createKafka(config.KAFKA_BROKERS, 'companion', log),
    topics: [Topics.events],
    namespace: config.KAFKA_NAMESPACE,
    consumer: { groupId: `${config.KAFKA_NAMESPACE}companion`, ...READER_SESSION },
    maxBatchSize: MAX_EVENTS_PER_TRANSACTION,
    // A partition's slices still come one after another, in order; the partitions' slices meet in one fold.
    partitionsAtOnce: config.KAFKA_PARTITIONS,
    // A redelivered event changes nothing (its copy in `companion.events` says it was folded), so offsets need not be committed
    // after every transaction: at most once a second, one request instead of one per batch.
    commitEveryMs: 1000,
    log,
  });

/** Folds each batch of agent.events into the projections. */
@Controller()
export class FoldController {
  constructor(
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    @Inject(LOG) private readonly log: Log,
    @Inject(CompanionMetrics) private readonly metrics: CompanionMetrics,
    @Inject(DEAD_LETTERS) private readonly deadLetters: EventDeadLetters,
    @Inject(FoldedPositions) private readonly folded: FoldedPositions,
  ) {
    this.foldTogether = readModels.all.map((dataSource) => this.foldsOn(dataSource));
  }

  /** Per primary (shard 0 first), its `foldsOn`. */
  private readonly foldTogether: ((slice: Read[]) => Promise<Rejected[]>)[];

  /**
   * Per PostgreSQL primary, folds the slices of its partitions handed over together in one
   * transaction there (the events of agent.events partition p are of conversations whose key
   * is on partition p, so their read models are on p's primary). A partition's next slice comes
   * only after its previous one resolved, so each conversation's events still fold in log order.
   * What it committed wakes the reads waiting for it (`FoldedPositions`).
   */
  private foldsOn(readModels: DataSource): (slice: Read[]) => Promise<Rejected[]> {
    return grouped(async (slices: Read[][]): Promise<Rejected[][]> => {
      const start = performance.now();
      const read = slices.flat();
      const { result, refused } = await foldOrSkip(readModels, read, this.log);
      this.metrics.batchFolded(
        read.map((r) => r.event),
        result,
        (performance.now() - start) / 1000,
      );
      const refusedOf = new Map(refused.map((r) => [r.message, r]));
      this.folded.committed(read.filter((r) => !refusedOf.has(r.message) && isKnownEvent(r.event)).map((r) => r.event));
      return slices.map((slice) => slice.filter((r) => refusedOf.has(r.message)).map((r) => refusedOf.get(r.message)!));
    }, { most: MAX_EVENTS_PER_TRANSACTION, size: (slice) => slice.length });
  }

  @EventPattern(Topics.events)
  async fold(@Payload() batch: PartitionBatch): Promise<void> {
    hop('companion.fold');
    const { read, unreadable } = readEvents(batch.messages, { topic: batch.topic, partition: batch.partition }, this.log);
    const spans = foldSpans(batch.messages);
    try {
      await this.deadLetters.send(batch.partition, unreadable);
      await this.deadLetters.send(batch.partition, await this.foldTogether[this.readModels.shardOf(batch.partition)](read));
      hop('companion.folded');
      this.metrics.folding(batch);
    } finally {
      for (const span of spans) span.end();
    }
  }
}

type Read = { event: ConversationEvent; message: KafkaMessage };

function readEvents(messages: KafkaMessage[], where: { topic: string; partition: number }, log: Log): { read: Read[]; unreadable: Rejected[] } {
  const read: Read[] = [];
  const unreadable: Rejected[] = [];
  for (const message of messages) {
    const record = readEventRecord(message.value);
    if (record.ok) read.push({ event: record.event, message });
    else {
      unreadable.push({ message, reason: record.reason });
      log.warn('dead-lettered a record of agent.events that does not parse', {
        ...where,
        offset: message.offset,
        key: message.key?.toString('utf8') ?? null,
        reason: record.reason.slice(0, 500),
      });
    }
  }
  return { read, unreadable };
}

/**
 * An event that parses but that the database refuses (texts are made storable, so this is a
 * backstop for what nobody foresaw) would fail its batch on every redelivery and block the
 * partition. When a batch fails with such an
 * error, its events are folded one by one and the ones refused are logged and returned, to be
 * dead-lettered.
 * Any other failure (the database is down) is thrown: kafkajs retries the batch, unresolved.
 */
async function foldOrSkip(readModels: DataSource, read: Read[], log: Log): Promise<{ result: FoldResult; refused: Rejected[] }> {
  try {
    return { result: await foldEvents(readModels, read.map((r) => r.event)), refused: [] };
  } catch (error) {
    if (!isRefusedByDatabase(error)) throw error;
  }
  const total: FoldResult = { applied: 0, duplicates: 0 };
  const refused: Rejected[] = [];
  for (const { event, message } of read) {
    try {
      const one = await foldEvents(readModels, [event]);
      total.applied += one.applied;
      total.duplicates += one.duplicates;
    } catch (error) {
      if (!isRefusedByDatabase(error)) throw error;
      refused.push({ message, reason: `the projections cannot hold the event: ${String(error)}` });
      log.error('dead-lettered an event the projections cannot hold', {
        id: event.id,
        conversation: event.conversation,
        position: event.position,
        type: event.type,
        error: String(error),
      });
    }
  }
  return { result: total, refused };
}

const tracer = tracerOf('companion');

/** A `fold` span in each trace the batch's records carry (`traceparent`, from the outbox publication); none when tracing is off. */
function foldSpans(messages: readonly KafkaMessage[]) {
  if (!tracing()) return [];
  const parents = new Set(messages.map((m) => m.headers?.traceparent?.toString()).filter((t): t is string => Boolean(t)));
  return [...parents].map((parent) => tracer.startSpan('fold', { kind: SpanKind.CONSUMER, attributes: { 'messaging.system': 'kafka', 'rudder.events': messages.length } }, contextOf(parent)));
}

