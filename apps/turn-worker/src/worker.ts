import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ModelClient } from '@rudder/agent';
import { conversationsWithOpenWork, createOutboxRelay, EVENT_STORE_SCHEMA, eventStoreMigrations, takePartitions, type Epochs } from '@rudder/event-store';
import { createKafka, createLog, createPool, ensureTopics, migrate, topicNames, type Config, type Pool } from '@rudder/runtime';
import { faultPoints } from './fault-points';
import { defaultAgent, modelFromConfig, type WorkerAgent } from './default-agent';
import { consumeInputs } from './ingest/consume-inputs';
import { ingestInputs } from './ingest/ingest-inputs';
import { connectPublishing } from './publishing';
import { createScheduler } from './turns/scheduler';

export type Worker = { stop(): Promise<void> };

/**
 * A turn worker: one member of the `turn-workers` consumer group. It ingests the inputs of
 * the partitions it owns into the event log, runs their conversations' turns, and relays the
 * events it stored to agent.events.
 */
export async function startWorker(
  config: Config,
  overrides: { agent?: WorkerAgent; model?: ModelClient; pool?: Pool } = {},
): Promise<Worker> {
  const log = createLog('turn-worker');
  const fault = faultPoints({ crashAt: config.CRASH_AT, pauseAt: config.PAUSE_AT });
  const agent = overrides.agent ?? defaultAgent(config);
  const topics = topicNames(config.KAFKA_NAMESPACE);
  const pool = overrides.pool ?? createPool(config.DATABASE_URL);
  await migrate(pool, EVENT_STORE_SCHEMA, eventStoreMigrations);
  const kafka = createKafka(config.KAFKA_BROKERS, 'turn-worker');
  await ensureTopics(kafka, topics, config.KAFKA_PARTITIONS);
  const publishing = await connectPublishing(kafka, topics);

  const workerId = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  let owned: ReadonlySet<number> = new Set();
  let epochs: Epochs = new Map();
  /** Settles once the epochs of the latest assignment are taken; batches wait for it. */
  let assignment: Promise<void> = Promise.resolve();
  const relay = createOutboxRelay({
    pool,
    publish: publishing.publishEvents,
    ownedPartitions: () => [...owned],
    afterPublish: () => fault('after-publish'),
    log,
  });
  const scheduler = createScheduler({
    pool,
    epochs: () => epochs,
    relay,
    agent,
    model: overrides.model ?? modelFromConfig(config),
    onToken: publishing.token,
    flushTokens: publishing.flushTokens,
    newTurnId: randomUUID,
    fault,
    log,
    retryMs: 1000,
  });

  const consumer = await consumeInputs({
    kafka,
    topic: topics.inputs,
    groupId: `${config.KAFKA_NAMESPACE}turn-workers`,
    sessionTimeoutMs: config.WORKER_SESSION_TIMEOUT_MS,
    heartbeatMs: config.WORKER_HEARTBEAT_MS,
    log,
    async onBatch(partition, messages) {
      await assignment;
      const { stored, conversations, rejected } = await ingestInputs(pool, partition, epochs, messages, agent.inputs);
      relay.enqueue(stored);
      await publishing.deadLetter(partition, rejected);
      for (const { reason, message } of rejected) log.warn('input dead-lettered', { partition, offset: message.offset, reason });
      fault('after-ingest');
      scheduler.poke(conversations.map((conversation) => ({ conversation, partition })));
      // A stop or a rollback aborts the running turn now; an interrupt waits for its next step.
      for (const event of stored) {
        if (event.type === 'stop.requested' && event.data.turn && event.data.mode !== 'interrupt') scheduler.stopTurn(event.conversation, partition);
      }
    },
    onAssignment(partitions) {
      owned = partitions;
      const previous = assignment;
      assignment = (async () => {
        await previous;
        await scheduler.keepOnly(partitions);
        // Until the epochs are taken nothing of these partitions is written; retry while they are ours.
        while (owned === partitions) {
          try {
            epochs = await takePartitions(pool, [...partitions], workerId);
            log.info('epochs taken', { epochs: Object.fromEntries(epochs) });
            relay.sweep();
            scheduler.poke(await conversationsWithOpenWork(pool, [...partitions]));
            return;
          } catch (error) {
            log.error('taking the assigned partitions failed; retrying', { error: String(error) });
            await new Promise((resolve) => setTimeout(resolve, 1000));
          }
        }
      })();
    },
  });
  log.info('turn worker started', { group: `${config.KAFKA_NAMESPACE}turn-workers`, topic: topics.inputs });

  return {
    async stop() {
      // Leave the group first so the partitions move at once; running turns resume on the new owner.
      await consumer.stop();
      await scheduler.stop();
      await relay.stop();
      await publishing.disconnect().catch(() => undefined);
      if (!overrides.pool) await pool.end();
    },
  };
}
