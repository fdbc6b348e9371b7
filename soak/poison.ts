import { randomBytes } from 'node:crypto';
import type { Kafka, Producer } from 'kafkajs';
import type { Finding } from './check';
import type { Rng } from './rng';

/** What the soak produces straight to agent.inputs, past the gateway: none of it may be answered or block its partition. */
export type PoisonKind = 'unparseable' | 'huge' | 'nul';
export const POISON_KINDS: readonly PoisonKind[] = ['unparseable', 'huge', 'nul'];

type Sent = { kind: PoisonKind; key: string; value: Buffer; partition: number; offset: string };

/**
 * Poison records on a conversation's own key, so they land on the partition of a conversation
 * the soak is talking to: a record that blocked its partition would leave that conversation's
 * inputs unanswered (lost). `check()` reads agent.inputs.dlq: each one must be there once or
 * more (a crash before the offset commit dead-letters it again), unchanged, with its reason and
 * source headers.
 */
export async function createPoisoner(kafka: Kafka, topics: { inputs: string; inputsDlq: string }) {
  const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const sent: Sent[] = [];
  const byKind: Record<PoisonKind, number> = { unparseable: 0, huge: 0, nul: 0 };

  const valueOf = (kind: PoisonKind, key: string, n: number): string => {
    const sentAt = new Date().toISOString();
    if (kind === 'unparseable') return `{"v":1,"type":"chat","id":"poison-${n}","conversation":${JSON.stringify(key)}, not json ${randomBytes(4).toString('hex')}`;
    if (kind === 'nul') return JSON.stringify({ v: 1, type: 'chat', id: `poison-nul-${n}`, conversation: key, sentAt, messages: [`poison ${n} a\u0000b`] });
    // Huge and wrong in thousands of places: the reason must stay bounded.
    return JSON.stringify({ v: 1, type: 'chat', id: `poison-huge-${n}`, conversation: key, sentAt, messages: Array.from({ length: 20_000 }, (_, i) => i) });
  };

  return {
    byKind,
    /** Produces one poison record of a random kind on `key`; resolves once every replica has it. */
    async inject(rng: Rng, key: string): Promise<PoisonKind> {
      const kind = rng.pick(POISON_KINDS);
      const value = Buffer.from(valueOf(kind, key, sent.length + 1));
      const [meta] = await producer.send({ topic: topics.inputs, acks: -1, messages: [{ key, value }] });
      sent.push({ kind, key, value, partition: meta.partition, offset: String(meta.baseOffset) });
      byKind[kind]++;
      return kind;
    },
    /** Reads agent.inputs.dlq (at most `timeoutMs`) until every poison record is found there; what is missing or changed is a finding. */
    async check(timeoutMs: number): Promise<{ findings: Finding[]; deadLetters: number }> {
      const found = new Map<string, { value: Buffer | null; headers: Record<string, string> }>();
      let deadLetters = 0;
      if (sent.length > 0) {
        const consumer = kafka.consumer({ groupId: `soak-dlq-check-${randomBytes(4).toString('hex')}` });
        await consumer.connect();
        await consumer.subscribe({ topic: topics.inputsDlq, fromBeginning: true });
        const wanted = new Set(sent.map((s) => `${s.partition}:${s.offset}`));
        let resolveAll: () => void = () => undefined;
        const all = new Promise<void>((resolve) => (resolveAll = resolve));
        await consumer.run({
          eachMessage: async ({ message }) => {
            deadLetters++;
            const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
            const at = `${headers['source-partition']}:${headers['source-offset']}`;
            if (headers['source-topic'] === topics.inputs) found.set(at, { value: message.value, headers });
            if ([...wanted].every((w) => found.has(w))) resolveAll();
          },
        });
        await Promise.race([all, new Promise((resolve) => setTimeout(resolve, timeoutMs))]);
        await consumer.disconnect();
      }
      const findings: Finding[] = [];
      for (const s of sent) {
        const letter = found.get(`${s.partition}:${s.offset}`);
        const what = `poison (${s.kind}) at ${topics.inputs} ${s.partition}:${s.offset}`;
        if (!letter) findings.push({ category: 'lost', key: s.key, message: `${what} is not on the dead-letter topic` });
        else if (!letter.value || !letter.value.equals(s.value)) findings.push({ category: 'inconsistent', key: s.key, message: `${what} was dead-lettered changed` });
        else if (!letter.headers.reason || letter.headers.reason.length > 2000) findings.push({ category: 'inconsistent', key: s.key, message: `${what}: reason of ${letter.headers.reason?.length ?? 0} characters` });
      }
      return { findings, deadLetters };
    },
    stop: () => producer.disconnect().catch(() => undefined),
  };
}
export type Poisoner = Awaited<ReturnType<typeof createPoisoner>>;
