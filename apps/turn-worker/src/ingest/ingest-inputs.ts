import type { KafkaMessage } from 'kafkajs';
import { InputRecord, type ConversationEvent } from '@rudder/contracts';
import { appendToConversations, type Epochs } from '@rudder/event-store';
import type { Pool } from '@rudder/runtime';
import { acceptInputs, probeKeys, type InputPolicy } from '../conversation/decisions';

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

/**
 * Ingests one batch of a partition: every valid input goes into its conversation's log in ONE
 * transaction (an input seen before is skipped; a steer is decided against the running turn),
 * so a long turn never holds up the inputs of other conversations. Returns what was newly
 * stored and what could not be read; the caller dead-letters the rejected records before it
 * commits the offsets.
 */
export async function ingestInputs(
  pool: Pool,
  partition: number,
  epochs: Epochs,
  messages: readonly KafkaMessage[],
  policy: InputPolicy,
) {
  const byConversation = new Map<string, InputRecord[]>();
  const rejected: Rejected[] = [];
  for (const message of messages) {
    const read = parseInput(message);
    if ('reason' in read) {
      rejected.push({ message, reason: read.reason });
      continue;
    }
    byConversation.set(read.input.conversation, [...(byConversation.get(read.input.conversation) ?? []), read.input]);
  }
  const stored: ConversationEvent[] = await appendToConversations(
    pool,
    partition,
    epochs,
    [...byConversation].map(([conversation, inputs]) => ({ conversation, probe: inputs.flatMap(probeKeys) })),
    (conversation, head, alreadyStored) => acceptInputs(head, byConversation.get(conversation)!, alreadyStored, policy),
  );
  return { stored, conversations: [...byConversation.keys()], rejected };
}
