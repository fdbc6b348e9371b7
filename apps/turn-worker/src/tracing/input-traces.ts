import type { KafkaMessage } from 'kafkajs';
import { contextOf, tracing } from '@rudder/runtime';
import { parseInput } from '../ingest/parse-input';

/** Inputs remembered at once at most (oldest forgotten first): far more than wait in the owned conversations. */
const REMEMBERED = 10_000;
const traces = new Map<string, string>();

/**
 * The `traceparent` each input's record came with (from the gateway's request), kept in memory
 * from ingest until its turn starts, so the turn is a span of the input's trace. A turn run by
 * another worker after a failover (or after a restart) starts a trace of its own. Only when
 * tracing is on (then a record is parsed a second time here); otherwise nothing is kept.
 */
export function rememberInputTraces(messages: readonly KafkaMessage[]): void {
  if (!tracing()) return;
  for (const message of messages) {
    const parent = message.headers?.traceparent;
    if (!parent) continue;
    const parsed = parseInput(message);
    if (!('input' in parsed)) continue;
    traces.set(parsed.input.id, parent.toString());
    if (traces.size > REMEMBERED) traces.delete(traces.keys().next().value as string);
  }
}

/** The context of the input's trace (the root context when none is known). */
export function inputTraceContext(input: string) {
  return contextOf(traces.get(input));
}
