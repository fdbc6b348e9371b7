import type { KafkaMessage } from 'kafkajs';
import { InputRecord, type ConversationEvent } from '@rudder/contracts';
import { appendToConversations, type Epochs } from '@rudder/event-store';
import { isRefusedByDatabase, type Pool } from '@rudder/runtime';
import { acceptInputs, probeKeys, type InputPolicy } from '../conversation/decisions';

export type Rejected = { message: KafkaMessage; reason: string };

/** A dead letter's reason names at most this many schema issues, each cut to ISSUE_CHARS. */
const MAX_ISSUES = 5;
const ISSUE_CHARS = 200;

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`);

/** Reads one record of agent.inputs: the input, or why it can't be one (a bounded sentence). */
export function parseInput(message: KafkaMessage): { input: InputRecord } | { reason: string } {
  if (!message.value) return { reason: 'the record has no value' };
  let json: unknown;
  try {
    json = JSON.parse(message.value.toString('utf8'));
  } catch (error) {
    return { reason: `the value is not JSON: ${cut((error as Error).message, ISSUE_CHARS)}` };
  }
  const parsed = InputRecord.safeParse(json);
  if (!parsed.success) {
    const { issues } = parsed.error;
    const named = issues.slice(0, MAX_ISSUES).map((i) => cut(`${i.path.join('.') || '(root)'}: ${i.message}`, ISSUE_CHARS));
    const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more issues` : '';
    return { reason: `the value is not an input: ${named.join('; ')}${more}` };
  }
  const key = message.key?.toString('utf8');
  if (key !== parsed.data.conversation) {
    return { reason: `the record key ${cut(JSON.stringify(key), ISSUE_CHARS)} is not its conversation ${parsed.data.conversation}` };
  }
  return { input: parsed.data };
}

/**
 * Ingests one batch of a partition: every valid input goes into its conversation's log in ONE
 * transaction (an input seen before is skipped; a steer is decided against the running turn),
 * so a long turn never holds up the inputs of other conversations. Returns what was newly
 * stored and what could not be ingested; the caller dead-letters the rejected records before
 * it commits the offsets.
 *
 * A record the database refuses (which the schemas should have caught) must not fail its
 * batch on every redelivery and so stop the partition: then the batch is ingested record by
 * record, in order, and each refused record is rejected with the database's reason.
 */
export async function ingestInputs(
  pool: Pool,
  partition: number,
  epochs: Epochs,
  messages: readonly KafkaMessage[],
  policy: InputPolicy,
) {
  const readable: { message: KafkaMessage; input: InputRecord }[] = [];
  const rejected: Rejected[] = [];
  for (const message of messages) {
    const read = parseInput(message);
    if ('reason' in read) rejected.push({ message, reason: read.reason });
    else readable.push({ message, input: read.input });
  }
  const conversations = [...new Set(readable.map((r) => r.input.conversation))];
  const ingest = (inputs: readonly InputRecord[]) => appendInputs(pool, partition, epochs, inputs, policy);
  try {
    return { stored: await ingest(readable.map((r) => r.input)), conversations, rejected };
  } catch (error) {
    if (!isRefusedByDatabase(error)) throw error;
  }
  const stored: ConversationEvent[] = [];
  for (const { message, input } of readable) {
    try {
      stored.push(...(await ingest([input])));
    } catch (error) {
      if (!isRefusedByDatabase(error)) throw error;
      rejected.push({ message, reason: `the database refused it: ${cut(String((error as Error).message), ISSUE_CHARS)}` });
    }
  }
  return { stored, conversations, rejected };
}

function appendInputs(pool: Pool, partition: number, epochs: Epochs, inputs: readonly InputRecord[], policy: InputPolicy) {
  const byConversation = new Map<string, InputRecord[]>();
  for (const input of inputs) byConversation.set(input.conversation, [...(byConversation.get(input.conversation) ?? []), input]);
  return appendToConversations(
    pool,
    partition,
    epochs,
    [...byConversation].map(([conversation, of]) => ({ conversation, probe: of.flatMap(probeKeys) })),
    (conversation, head, alreadyStored) => acceptInputs(head, byConversation.get(conversation)!, alreadyStored, policy),
  );
}
