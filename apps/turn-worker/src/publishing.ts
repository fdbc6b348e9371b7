import type { Kafka, Producer } from 'kafkajs';
import type { ConversationEvent, TokenRecord } from '@rudder/contracts';
import { contextOf, hop, otelTrace, SpanKind, traceparent, tracerOf, tracing, deadLetter, type TopicNames } from '@rudder/runtime';
import type { Misrouted, Rejected } from './ingest/ingest-inputs';

/**
 * The worker's producers. Events go through an idempotent producer (acks=all, one request
 * in flight, so order holds per partition); dead letters through one of their own; tokens,
 * best effort, through a third so they never queue up behind events.
 */
export async function connectPublishing(kafka: Kafka, topics: TopicNames) {
  const newReliable = () => kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  let reliable: Producer = newReliable();
  // Set by a failed send of events: the next one goes through a new producer (see publishEvents).
  let replaceReliable = false;
  const bestEffort: Producer = kafka.producer({ allowAutoTopicCreation: false });
  const deadLetters: Producer = kafka.producer({ allowAutoTopicCreation: false });
  await Promise.all([reliable.connect(), bestEffort.connect(), deadLetters.connect()]);

  const pendingTokens = new Map<string, TokenRecord>();
  /** At most one token send in flight and one waiting (it takes whatever is pending when it starts). */
  let tokenSends: Promise<void> = Promise.resolve();
  let tokenSendWaiting = false;
  const sendTokens = (): Promise<void> => {
    if (tokenSendWaiting) return tokenSends;
    tokenSendWaiting = true;
    tokenSends = tokenSends.then(async () => {
      tokenSendWaiting = false;
      if (pendingTokens.size === 0) return;
      const records = [...pendingTokens.values()];
      pendingTokens.clear();
      await bestEffort
        .send({ topic: topics.tokens, acks: 1, messages: records.map((r) => ({ key: r.conversation, value: JSON.stringify(r) })) })
        .catch(() => undefined); // tokens are best effort: the stored reply is the truth
    });
    return tokenSends;
  };
  const tokenTimer = setInterval(() => {
    if (pendingTokens.size > 0) void sendTokens();
  }, 40);

  return {
    /**
     * Sends events in order; resolves once every replica has them. The relay calls it on one
     * chain, never twice at once. After a failed send the producer is replaced before the next
     * one: kafkajs' idempotent producer does not advance its sequence for a send whose retries
     * ran out, yet the broker may have written it, so the next send through the same producer
     * could be acknowledged as that duplicate and lost, or refused for good with
     * OUT_OF_ORDER_SEQUENCE_NUMBER. A new producer has a new producer id and
     * sequence; what the failed send may have written is published again by the relay, and
     * consumers deduplicate by event id.
     */
    async publishEvents(events: readonly ConversationEvent[], traces: readonly (string | null)[] = []) {
      if (replaceReliable) {
        await reliable.disconnect().catch(() => undefined);
        reliable = newReliable();
        await reliable.connect();
        replaceReliable = false;
      }
      // The publication joins the trace each event was stored in (a span per trace), and each
      // record carries that span as its traceparent, for the companion's fold.
      const publication = publicationSpans(traces);
      try {
        hop('worker.events-sent');
        await reliable.send({
          topic: topics.events,
          acks: -1,
          messages: events.map((e, i) => {
            const parent = publication.parentOf(traces[i]);
            return { key: e.conversation, value: JSON.stringify(e), headers: parent ? { 'event-id': e.id, traceparent: parent } : { 'event-id': e.id } };
          }),
        });
        publication.end();
      } catch (error) {
        publication.end(error);
        replaceReliable = true;
        throw error;
      }
    },
    /**
     * Dead-letters the records that could not be ingested to agent.inputs.dlq (`deadLetter` in
     * libs/runtime: unchanged, bounded reason, source headers), through a producer of their own
     * (a refused dead letter must not touch the events' idempotent sequence).
     */
    deadLetter(sourcePartition: number, rejected: readonly Rejected[]) {
      return deadLetter(deadLetters, topics.inputsDlq, { topic: topics.inputs, partition: sourcePartition }, rejected);
    },
    /**
     * Sends records of agent.inputs that arrived on the wrong partition to the partition of
     * their conversation, unchanged but for a `rerouted-from` header (`<partition>:<offset>`),
     * in their order, through the dead letters' producer (never the events' sequence). Resolves
     * once every replica has them; the caller commits the source offsets only then. Sent twice
     * (a crash before the commit), the copy is an input seen before: its once key skips it.
     */
    async reroute(sourcePartition: number, misrouted: readonly Misrouted[]) {
      if (misrouted.length === 0) return;
      await deadLetters.send({
        topic: topics.inputs,
        acks: -1,
        messages: misrouted.map(({ message, partition }) => ({
          partition,
          key: message.key,
          value: message.value,
          headers: { ...message.headers, 'rerouted-from': `${sourcePartition}:${message.offset}` },
        })),
      });
    },
    /**
     * Starts sending the tokens still held back, without waiting for the broker: the runner calls
     * it right before it stores a reply, so a step's tokens are on their way before the events
     * that store the step, and the step does not wait a produce round trip for them (2–7 ms of
     * every answering step). Tokens are best effort and two topics have no order between
     * them, so a reader may see them after the step's events, as it always could.
     */
    flushTokens(): void {
      if (pendingTokens.size > 0) void sendTokens();
    },
    /** Tokens of one step are coalesced for up to 40 ms into one record. */
    token(token: Omit<TokenRecord, 'v'>) {
      const id = `${token.conversation}\u0000${token.turn}\u0000${token.step}`;
      const pending = pendingTokens.get(id);
      pendingTokens.set(id, pending ? { ...pending, text: pending.text + token.text } : { v: 1, ...token });
    },
    async disconnect() {
      clearInterval(tokenTimer);
      await sendTokens();
      await Promise.all([reliable.disconnect(), bestEffort.disconnect(), deadLetters.disconnect()]);
    },
  };
}
export type Publishing = Awaited<ReturnType<typeof connectPublishing>>;

const tracer = tracerOf('turn-worker');
const NO_PUBLICATION = { parentOf: (_trace: string | null | undefined): string | null => null, end: (_error?: unknown) => undefined };

/** An `outbox publish` span for each distinct trace among the events' (none when tracing is off or none was stored). */
function publicationSpans(traces: readonly (string | null)[]) {
  if (!tracing() || !traces.some(Boolean)) return NO_PUBLICATION;
  const spans = new Map<string, { span: ReturnType<typeof tracer.startSpan>; header: string | null }>();
  for (const trace of new Set(traces)) {
    if (!trace) continue;
    const parent = contextOf(trace);
    const span = tracer.startSpan('outbox publish', { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'kafka' } }, parent);
    spans.set(trace, { span, header: traceparent(otelTrace.setSpan(parent, span)) });
  }
  return {
    parentOf: (trace: string | null | undefined) => (trace ? (spans.get(trace)?.header ?? null) : null),
    end: (error?: unknown) => {
      for (const { span } of spans.values()) {
        if (error !== undefined) span.recordException(error as Error);
        span.end();
      }
    },
  };
}

