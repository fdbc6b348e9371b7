import type { Kafka, KafkaMessage } from 'kafkajs';
import { keepConsuming, type KeptConsumer, type Log } from '@rudder/runtime';

export type InputsConsumerOptions = {
  kafka: Kafka;
  topic: string;
  groupId: string;
  sessionTimeoutMs: number;
  heartbeatMs: number;
  /** Stores a batch durably; the offsets are committed only after it resolves. */
  onBatch(partition: number, messages: KafkaMessage[]): Promise<void>;
  /** The partitions this member owns now, after every rebalance. */
  onAssignment(partitions: ReadonlySet<number>): void;
  log: Log;
};

/**
 * The turn workers' consumer group on agent.inputs. A batch handler only ingests (short
 * transactions), never runs a turn, so heartbeats keep flowing while turns last minutes. A
 * consumer kafkajs gave up on is replaced (keepConsuming).
 */
export function consumeInputs(options: InputsConsumerOptions): Promise<KeptConsumer> {
  const { kafka, topic, log } = options;
  return keepConsuming({
    log,
    create: () =>
      kafka.consumer({
        groupId: options.groupId,
        sessionTimeout: options.sessionTimeoutMs,
        heartbeatInterval: options.heartbeatMs,
        rebalanceTimeout: Math.max(options.sessionTimeoutMs, 10_000),
        maxWaitTimeInMs: 100,
      }),
    async run(consumer) {
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        const partitions = new Set(payload.memberAssignment[topic] ?? []);
        log.info('partitions assigned', { partitions: [...partitions] });
        options.onAssignment(partitions);
      });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          if (!isRunning() || isStale() || batch.messages.length === 0) return;
          await options.onBatch(batch.partition, batch.messages);
          const last = batch.messages[batch.messages.length - 1].offset;
          resolveOffset(last);
          await consumer.commitOffsets([{ topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
          await heartbeat();
        },
      });
    },
  });
}
