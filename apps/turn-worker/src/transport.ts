import { Topics } from '@rudder/contracts';
import { createKafka, createLog, KafkaBatchServer, READER_SESSION, readConfig, type Config } from '@rudder/runtime';

/**
 * The turn workers' consumer group on agent.inputs, as a Nest microservice transport:
 * `NestFactory.createMicroservice(AppModule, { strategy: turnWorkerTransport() })`. A batch
 * handler only ingests (short transactions), never runs a turn, so heartbeats keep flowing
 * while turns last minutes.
 */
export function turnWorkerTransport(config: Config = readConfig(), log = createLog('turn-worker')): KafkaBatchServer {
  return new KafkaBatchServer({
    kafka: createKafka(config.KAFKA_BROKERS, 'turn-worker', log),
    topics: [Topics.inputs],
    namespace: config.KAFKA_NAMESPACE,
    consumer: {
      groupId: `${config.KAFKA_NAMESPACE}turn-workers`,
      sessionTimeout: config.WORKER_SESSION_TIMEOUT_MS,
      heartbeatInterval: config.WORKER_HEARTBEAT_MS,
      rebalanceTimeout: Math.max(config.WORKER_SESSION_TIMEOUT_MS, 10_000),
      // A fetch returns as soon as a record arrives: this bounds only an idle one (and how long
      // a stop waits for it). At 100 ms an idle worker made ten fetches a second per broker, most
      // of its idle CPU (bench/results.md, benchmark 8).
      maxWaitTimeInMs: READER_SESSION.maxWaitTimeInMs,
    },
    // Partitions are ingested side by side: each batch is one short transaction of its own.
    partitionsAtOnce: config.KAFKA_PARTITIONS,
    log,
  });
}
