import { createKafka, deadLetter, topicNames, type Config, type Rejected } from '@rudder/runtime';

/** The companion's dead letters (Nest token). */
export const DEAD_LETTERS = Symbol('companion.dead-letters');

/**
 * Where the companion puts the records of agent.events it cannot fold: `agent.events.dlq`, each
 * record unchanged with its reason and source headers (`deadLetter` in libs/runtime, the same as
 * agent.inputs.dlq), through a producer of its own. The companion is the one reader of
 * agent.events that commits its offsets in one group for the deployment, so each bad record is
 * dead-lettered once (again only after a crash before the commit); the gateways' live consumers
 * (a group each) only skip and log.
 */
export type EventDeadLetters = {
  /** Resolves once every replica has them; throws only on an outage (the batch is then redelivered). */
  send(partition: number, rejected: readonly Rejected[]): Promise<void>;
  close(): Promise<void>;
};

export async function connectEventDeadLetters(config: Config): Promise<EventDeadLetters> {
  const topics = topicNames(config.KAFKA_NAMESPACE);
  const producer = createKafka(config.KAFKA_BROKERS, 'companion-dead-letters').producer({ allowAutoTopicCreation: false });
  await producer.connect();
  return {
    send: async (partition, rejected) => {
      if (rejected.length > 0) await deadLetter(producer, topics.eventsDlq, { topic: topics.events, partition }, rejected);
    },
    close: () => producer.disconnect(),
  };
}
