/** A local Kafka node's configuration: its cluster id, its server.properties and its log4j.properties (kafka-node.ts writes them). */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/**
 * 16 random bytes in base64url, 22 characters: what Kafka's Uuid parses. Like Kafka's own
 * Uuid.randomUuid(), never one starting with '-': StorageTool's argument parser would take
 * it for an option ("argument --cluster-id/-t: expected one argument"), 1 start in 64.
 */
export function randomClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export function serverProperties(p: { dir: string; nodeId: number; port: number; controllerPort: number; voters: string; replicas: number; partitions: number }): string {
  const minInSync = p.replicas >= 3 ? 2 : 1;
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': p.nodeId,
    'controller.quorum.voters': p.voters,
    listeners: `PLAINTEXT://127.0.0.1:${p.port},CONTROLLER://127.0.0.1:${p.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${p.port}`,
    'controller.listener.names': 'CONTROLLER',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': join(p.dir, 'data'),
    // Every topic, internal ones too, on every node (1 or 3), writable with one node down;
    // few partitions start faster.
    'default.replication.factor': p.replicas,
    'min.insync.replicas': minInSync,
    'offsets.topic.replication.factor': p.replicas,
    'offsets.topic.num.partitions': 4,
    'transaction.state.log.replication.factor': p.replicas,
    'transaction.state.log.min.isr': minInSync,
    'transaction.state.log.num.partitions': 4,
    // Tests join and leave consumer groups all the time: no initial delay, short sessions allowed.
    'group.initial.rebalance.delay.ms': 0,
    'group.min.session.timeout.ms': 1000,
    'auto.create.topics.enable': 'false',
    'num.partitions': p.partitions,
    // After a SIGKILL the restarted broker cannot register until the controller expires the
    // dead incarnation's session (9 s by default); on loopback short is safe.
    'broker.session.timeout.ms': 3000,
    'broker.heartbeat.interval.ms': 500,
    // Two cores: the defaults (3 network, 8 I/O threads) only add contention.
    'num.network.threads': 2,
    'num.io.threads': 4,
  };
  return Object.entries(settings).map(([key, value]) => `${key}=${value}`).join('\n') + '\n';
}

export function log4jProperties(logFile: string): string {
  return [
    'log4j.rootLogger=WARN, file',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.Append=true',
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    // The lines that say the broker started or stopped.
    'log4j.logger.kafka.server.KafkaServer=INFO',
    'log4j.logger.kafka.server.BrokerServer=INFO',
    'log4j.logger.kafka.server.KafkaRaftServer=INFO',
    'log4j.logger.kafka.Kafka$=INFO',
    '',
  ].join('\n');
}
