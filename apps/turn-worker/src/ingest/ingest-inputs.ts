import type { KafkaMessage } from 'kafkajs';
import { InputRecord, inputText, type ConversationEvent, type DomainEvent } from '@rudder/contracts';
import { appendIfNew } from '@rudder/event-store';
import type { Pool } from '@rudder/runtime';

export type Rejected = { message: KafkaMessage; reason: string };

/** Reads one record of agent.inputs: the input, or why it can't be one. */
export function parseInput(message: KafkaMessage): { input: InputRecord } | { reason: string } {
  if (!message.value) return { reason: 'the record has no value' };
  let json: unknown;
  try {
    json = JSON.parse(message.value.toString('utf8'));
  } catch (error) {
    return { reason: `the value is not JSON: ${(error as Error).message}` };
  }
  const parsed = InputRecord.safeParse(json);
  if (!parsed.success) return { reason: `the value is not an input: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}` };
  const key = message.key?.toString('utf8');
  if (key !== parsed.data.conversation) return { reason: `the record key ${JSON.stringify(key)} is not its conversation ${parsed.data.conversation}` };
  return { input: parsed.data };
}

const accepted = (input: InputRecord): DomainEvent => ({
  type: 'input.accepted',
  data: {
    input: {
      id: input.id,
      kind: input.type,
      text: inputText(input.messages),
      messages: input.messages,
      subject: input.subject,
      sentAt: input.sentAt,
    },
  },
});

/**
 * Ingests one batch of a partition: every valid input goes into its conversation's log in ONE
 * transaction (an input id seen before is skipped), so a long turn never holds up the inputs
 * of other conversations. Returns what was newly stored and what could not be read; the caller
 * dead-letters the rejected records before it commits the offsets.
 */
export async function ingestInputs(pool: Pool, partition: number, messages: readonly KafkaMessage[]) {
  const byConversation = new Map<string, { partition: number; events: DomainEvent[] }>();
  const rejected: Rejected[] = [];
  for (const message of messages) {
    const read = parseInput(message);
    if ('reason' in read) {
      rejected.push({ message, reason: read.reason });
      continue;
    }
    const entry = byConversation.get(read.input.conversation) ?? { partition, events: [] };
    entry.events.push(accepted(read.input));
    byConversation.set(read.input.conversation, entry);
  }
  const stored: ConversationEvent[] = byConversation.size > 0 ? await appendIfNew(pool, byConversation) : [];
  return { stored, conversations: [...byConversation.keys()], rejected };
}
