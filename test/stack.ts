import { expect, inject } from 'vitest';
import { gateName } from './scripts';
import { startSystem, type Stack, type StackOptions } from './system';
import { started } from './turns';

export * from './system';
export { answered, started } from './turns';

/**
 * The whole system (see system.ts) on the test run's Kafka and PostgreSQL (test/global-setup.ts),
 * on as many primaries as the project provides (`databases`: the e2e-shards project's three) unless the options say.
 */
export const startStack = (options: StackOptions = {}): Promise<Stack> =>
  startSystem({ kafkaBrokers: inject('kafkaBrokers'), databaseUrl: inject('databaseUrl'), bundles: inject('bundles') }, { databases: inject('databases'), ...options });

/** Sends a chat whose model reply is held at `gate` (its text names it), and resolves with its turn once the reply is held there. */
export async function heldAt(stack: Stack, gate: string, conversation: string, id: string, text: string) {
  expect((await stack.http.post(conversation, '/chat', { text, id })).status).toBe(202);
  const turn = await started(stack.client, conversation, id);
  await stack.model.gate(gate).reached();
  return turn;
}

/** A running turn whose model reply is held at a gate of its own until `open()`: every input sent meanwhile finds it running. */
export async function holding(stack: Stack, conversation: string, id = 'p') {
  const gate = gateName('held');
  const text = `hold gate:${gate}`;
  const turn = await heldAt(stack, gate, conversation, id, text);
  return { turn, text, open: () => stack.model.gate(gate).open() };
}
