import type { KafkaMessage } from 'kafkajs';
import { InputRecord } from '@rudder/contracts';

/** A dead letter's reason names at most this many schema issues, each cut to ISSUE_CHARS. */
const MAX_ISSUES = 5;
export const ISSUE_CHARS = 200;

/** `text`, or its first `max` characters and how long it was. */
export const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`);

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
