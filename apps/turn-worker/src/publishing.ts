import type { Kafka, Producer } from 'kafkajs';
import type { ConversationEvent, TokenRecord } from '@rudder/contracts';
import type { TopicNames } from '@rudder/runtime';
import type { Rejected } from './ingest/ingest-inputs';

/**
 * The worker's producers. Events and dead letters go through an idempotent producer
 * (acks=all, one request in flight, so order holds per partition); tokens, best effort,
 * through another so they never queue up behind events.
 */
export async function connectPublishing(kafka: Kafka, topics: TopicNames) {
  const reliable: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const bestEffort: Producer = kafka.producer({ allowAutoTopicCreation: false });
  await Promise.all([reliable.connect(), bestEffort.connect()]);

  const pendingTokens = new Map<string, TokenRecord>();
  const flushTokens = async () => {
    if (pendingTokens.size === 0) return;
    const records = [...pendingTokens.values()];
    pendingTokens.clear();
    await bestEffort
      .send({ topic: topics.tokens, acks: 1, messages: records.map((r) => ({ key: r.conversation, value: JSON.stringify(r) })) })
      .catch(() => undefined); // tokens are best effort: the stored reply is the truth
  };
  const tokenTimer = setInterval(() => void flushTokens(), 40);

  return {
    async publishEvents(events: readonly ConversationEvent[]) {
      await reliable.send({
        topic: topics.events,
        acks: -1,
        messages: events.map((e) => ({ key: e.conversation, value: JSON.stringify(e), headers: { 'event-id': e.id } })),
      });
    },
    async deadLetter(sourcePartition: number, rejected: readonly Rejected[]) {
      if (rejected.length === 0) return;
      await reliable.send({
        topic: topics.inputsDlq,
        acks: -1,
        messages: rejected.map(({ message, reason }) => ({
          key: message.key,
          value: message.value,
          headers: { reason, 'source-topic': topics.inputs, 'source-partition': String(sourcePartition), 'source-offset': message.offset },
        })),
      });
    },
    /**
     * Sends the tokens still held back. The runner awaits it before it stores a reply, so a
     * step's tokens reach Kafka before the events that store the step (two topics have no
     * order between them, so a reader may still see them the other way round).
     */
    flushTokens,
    /** Tokens of one step are coalesced for up to 40 ms into one record. */
    token(token: Omit<TokenRecord, 'v'>) {
      const id = `${token.conversation}\u0000${token.turn}\u0000${token.step}`;
      const pending = pendingTokens.get(id);
      pendingTokens.set(id, pending ? { ...pending, text: pending.text + token.text } : { v: 1, ...token });
    },
    async disconnect() {
      clearInterval(tokenTimer);
      await flushTokens();
      await Promise.all([reliable.disconnect(), bestEffort.disconnect()]);
    },
  };
}
export type Publishing = Awaited<ReturnType<typeof connectPublishing>>;
