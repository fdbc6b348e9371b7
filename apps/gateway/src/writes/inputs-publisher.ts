import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InputRecord } from '@rudder/contracts';
import { hop, topicNames, traceparent, type Config, type Log } from '@rudder/runtime';
import type { Kafka, Producer } from 'kafkajs';
import { GatewayError } from '../errors/gateway-error';
import { OutageLog } from '../errors/outage-log';
import { CONFIG, KAFKA, LOG } from '../tokens';

/** One produce request carries at most this many records, or about this many bytes of values. */
const MAX_RECORDS_PER_SEND = 500;
const MAX_BYTES_PER_SEND = 512 * 1024;

type Waiting = { record: InputRecord; value: string; bytes: number; trace: string | null; sent: { resolve(): void; reject(error: unknown): void } };

/**
 * Produces inputs to `agent.inputs` (key = conversation key, so a conversation's inputs stay
 * in order on one partition). The producer is idempotent with one request in flight and
 * acks=all: a retried send neither duplicates nor reorders a record, and a 202 means the
 * record is on every in-sync replica. Duplicates across HTTP retries are the input id's job.
 *
 * One request in flight would make concurrent requests queue behind each other's round trip,
 * so records are grouped: what arrives while a send is in flight goes together in the next
 * one (in arrival order, so a conversation's records keep their order). A send that fails
 * fails every request in it.
 *
 * Retries are bounded (the runtime's client: kafkajs warns that this "may invalidate EoS"),
 * so a request does not hang while Kafka is away: a send that gives up answers 503 even if
 * the record made it, and the client's retry with the same id is answered once by the worker.
 *
 * It connects at boot (the gateway does not start without Kafka). After a failed send the
 * producer is replaced (a new producer id and sequence) before the next: kafkajs does not
 * advance an idempotent producer's sequence for a send whose retries ran out, though the broker
 * may have written it, so the next records through the same producer could be acknowledged as
 * that duplicate and never written — a 202 (or a 503 naming the id) for a lost input; the soak
 * found it with brokers killed (the worker's events producer does the same;
 * inputs-publisher.int.spec.ts).
 */
@Injectable()
export class InputsPublisher implements OnModuleInit, OnApplicationShutdown {
  private producer: Producer;
  private readonly newProducer: () => Producer;
  private readonly topic: string;
  private connected: Promise<void> | null = null;
  private readonly outage: OutageLog;
  private waiting: Waiting[] = [];
  private sending = false;

  constructor(@Inject(KAFKA) kafka: Kafka, @Inject(CONFIG) config: Config, @Inject(LOG) log: Log) {
    this.outage = new OutageLog(log, 'Kafka');
    this.newProducer = () => kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    this.producer = this.newProducer();
    this.topic = topicNames(config.KAFKA_NAMESPACE).inputs;
  }

  /**
   * Produces one input (a chat, a steer, a stop, a retraction or a promotion). Resolves once the record is acknowledged
   * by all in-sync replicas; 503 `unavailable` otherwise.
   */
  async publish(input: InputRecord): Promise<void> {
    // The gateway never produces a record its consumers would send to the dead-letter topic.
    const record = InputRecord.parse(input);
    try {
      await new Promise<void>((resolve, reject) => {
        const value = JSON.stringify(record);
        // The request's trace goes with the record (null when tracing is off).
        this.waiting.push({ record, value, bytes: Buffer.byteLength(value), trace: traceparent(), sent: { resolve, reject } });
        void this.sendWaiting();
      });
    } catch (error) {
      this.outage.failed(error, { topic: this.topic, type: record.type, id: record.id });
      // A chat or a steer carries the client's id; the controls have fresh ids of their own.
      const retry = record.type === 'chat' || record.type === 'steer' ? 'retry with the same id' : `send the ${record.type} again`;
      throw new GatewayError('unavailable', `the ${record.type} could not be stored (Kafka unavailable); ${retry}`, { kafka: 'unavailable' });
    }
  }

  /** Sends what waits, one request at a time, each with as many waiting records as fit. */
  private async sendWaiting(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.takeBatch();
        try {
          await this.connect();
          hop('gateway.input-sent');
          await this.producer.send({
            topic: this.topic,
            acks: -1,
            messages: batch.map((w) => ({ key: w.record.conversation, value: w.value, ...(w.trace ? { headers: { traceparent: w.trace } } : {}) })),
          });
          hop('gateway.input-acked');
          this.outage.answered();
          for (const w of batch) w.sent.resolve();
        } catch (error) {
          // Sends are one at a time (this chain), so no other send is using the failed producer.
          const failed = this.producer;
          this.producer = this.newProducer();
          this.connected = null;
          void failed.disconnect().catch(() => undefined);
          for (const w of batch) w.sent.reject(error);
        }
      }
    } finally {
      this.sending = false;
    }
  }

  private takeBatch(): Waiting[] {
    let bytes = 0;
    let count = 0;
    while (count < this.waiting.length && count < MAX_RECORDS_PER_SEND) {
      bytes += this.waiting[count].bytes;
      if (count > 0 && bytes > MAX_BYTES_PER_SEND) break;
      count++;
    }
    return this.waiting.splice(0, count);
  }

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined);
  }

  private connect(): Promise<void> {
    this.connected ??= this.producer.connect().catch((error: unknown) => {
      this.connected = null;
      throw error;
    });
    return this.connected;
  }
}
