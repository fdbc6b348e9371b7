import { randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { InputRecord, inputText, type ConversationEvent } from '@rudder/contracts';
import { conversationRules, decideInputs, evolve, receiptKeys, startNextTurn, type ConversationState, type GuardOutcome } from '@rudder/conversation';
import { appendToConversations, readStates, type Epochs, type Seen, type Written } from '@rudder/event-store';
import { isRefusedByDatabase, type Pool, type Rejected } from '@rudder/runtime';
import type { GuardInput } from '../agents/agent-definition';
import type { AgentRegistry, RunnableAgent } from '../agents/agents';

/** What ingesting needs of the deployment's agents. */
export type IngestAgents = Pick<AgentRegistry, 'defaultAgent' | 'policyOf' | 'anyGuard'> & Partial<Pick<AgentRegistry, 'argumentsError'>> & {
  get(name: string | null): Pick<RunnableAgent, 'name' | 'guard' | 'guardTimeoutMs'> | undefined;
};

/** A guard that threw or ran past its time budget on one input: the caller logs and counts it. */
export type GuardFailure = { conversation: string; input: string; agent: string; reason: 'error' | 'timeout'; error: string };

export type { Rejected };

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
 * so a long turn never holds up the inputs of other conversations. A conversation with no turn
 * running starts the next one in that same transaction (`turn.started`, `input.delivered`);
 * the caller's poke makes its runner read and run it. Returns what was newly
 * stored and what could not be ingested; the caller dead-letters the rejected records before
 * it commits the offsets.
 *
 * The agents' input guards run first, outside the transaction (a guard may call out), on every
 * chat and steer; the decisions under the lock record their refusals. What a guard said is
 * kept by conversation and input id (ids are the client's choice: two conversations may use
 * the same). A guard that throws or runs past its agent's `guardTimeoutMs` decides nothing for
 * that input (`guard.failed`, reported to `guardFailed`), and the batch goes on.
 *
 * A record the database refuses (which the schemas should have caught) must not fail its
 * batch on every redelivery and so stop the partition: then the batch is ingested record by
 * record, in order, and each refused record is rejected with the database's reason.
 *
 * A record of a conversation first seen on another partition is not ingested here (that
 * partition's owner writes the conversation): it is returned in `misrouted` with the
 * conversation's partition, and the caller re-routes it there before it commits the offsets.
 */
export async function ingestInputs(
  pool: Pool,
  partition: number,
  epochs: Epochs,
  messages: readonly KafkaMessage[],
  agents: IngestAgents,
  seen: (conversation: string) => Seen<ConversationState> | undefined = () => undefined,
  guardFailed: (failure: GuardFailure) => void = () => undefined,
  /** The announcement channel: what is stored is announced there as it commits (null: not announced). */
  announce: string | null = null,
) {
  const readable: { message: KafkaMessage; input: InputRecord }[] = [];
  const rejected: Rejected[] = [];
  for (const message of messages) {
    const read = parseInput(message);
    if ('reason' in read) rejected.push({ message, reason: read.reason });
    else readable.push({ message, input: read.input });
  }
  const guarded = await guard(pool, readable.map((r) => r.input), agents, guardFailed);
  const ingest = (inputs: readonly InputRecord[]) => appendInputs(pool, partition, epochs, inputs, agents, guarded, seen, announce);
  const done = (stored: ConversationEvent[], elsewhere: ReadonlyMap<string, number>, written?: Pick<Written, 'before' | 'trace'>) => ({
    stored,
    // For the outbox relay: with `before` it publishes these as they are (record by record, it reads them back).
    before: written?.before ?? new Map<string, number>(),
    trace: written?.trace ?? null,
    conversations: [...new Set(readable.map((r) => r.input.conversation))].filter((c) => !elsewhere.has(c)),
    news: newsOf(stored, written?.before),
    rejected,
    misrouted: readable.flatMap(({ message, input }) => {
      const to = elsewhere.get(input.conversation);
      return to === undefined ? [] : [{ message, partition: to }];
    }),
  });
  try {
    const { stored, elsewhere, before, trace } = await ingest(readable.map((r) => r.input));
    return done(stored, elsewhere, { before, trace });
  } catch (error) {
    if (!isRefusedByDatabase(error)) throw error;
  }
  const stored: ConversationEvent[] = [];
  const elsewhere = new Map<string, number>();
  for (const { message, input } of readable) {
    try {
      const one = await ingest([input]);
      stored.push(...one.stored);
      for (const [conversation, to] of one.elsewhere) elsewhere.set(conversation, to);
    } catch (error) {
      if (!isRefusedByDatabase(error)) throw error;
      rejected.push({ message, reason: `the database refused it: ${cut(String((error as Error).message), ISSUE_CHARS)}` });
    }
  }
  return done(stored, elsewhere);
}

/**
 * What one write stored in a conversation, and the position of its last event before it: a
 * runner holding the conversation as of exactly `after` folds `events` and needs no read.
 */
export type ConversationNews = { after: number; events: ConversationEvent[] };

/**
 * The news of each conversation the batch wrote, from its one transaction. Ingested record by
 * record (`before` unknown), there is none: other writes may sit between those records' events,
 * so their runners read the log.
 */
function newsOf(stored: readonly ConversationEvent[], before?: ReadonlyMap<string, number>): Map<string, ConversationNews> {
  const news = new Map<string, ConversationNews>();
  if (!before) return news;
  for (const event of stored) {
    const of = news.get(event.conversation);
    if (of) of.events.push(event);
    else news.set(event.conversation, { after: before.get(event.conversation) ?? 0, events: [event] });
  }
  return news;
}

/** A record of a conversation stored on another partition: the caller sends it there. */
export type Misrouted = { message: KafkaMessage; partition: number };

function appendInputs(
  pool: Pool,
  partition: number,
  epochs: Epochs,
  inputs: readonly InputRecord[],
  agents: IngestAgents,
  guarded: ReadonlyMap<string, GuardOutcome>,
  seen: (conversation: string) => Seen<ConversationState> | undefined,
  announce: string | null,
) {
  const byConversation = new Map<string, InputRecord[]>();
  for (const input of inputs) byConversation.set(input.conversation, [...(byConversation.get(input.conversation) ?? []), input]);
  return appendToConversations(
    pool,
    conversationRules,
    partition,
    epochs,
    [...byConversation].map(([conversation, of]) => ({ conversation, probe: of.flatMap(receiptKeys) })),
    (conversation, state, alreadyStored) => {
      const decided = decideInputs(state, byConversation.get(conversation)!, alreadyStored, agents, (input) => guarded.get(inputKey(input)));
      // An idle conversation's next turn starts in the same transaction: one commit less per turn.
      return [...decided, ...startNextTurn(decided.reduce(evolve, state), randomUUID())];
    },
    seen,
    { announce },
  );
}

/** An input among a batch's per-input facts: its conversation and its id, never its id alone. */
const inputKey = (input: Pick<InputRecord, 'conversation' | 'id'>) => JSON.stringify([input.conversation, input.id]);

/**
 * Runs the input guards of the chats and steers of a batch, each with the agent that will
 * answer it: the conversation's (it never changes once chosen), else the one its chat names,
 * else the default. Reads the conversations' agents only when some agent has a guard.
 * Answers what they said by `inputKey`; an id that comes twice in a conversation's batch is
 * guarded once (the decider answers its second record by the first's decision).
 */
async function guard(
  pool: Pool,
  inputs: readonly InputRecord[],
  agents: IngestAgents,
  guardFailed: (failure: GuardFailure) => void,
): Promise<Map<string, GuardOutcome>> {
  const outcomes = new Map<string, GuardOutcome>();
  const guarded = inputs.filter((i) => i.type === 'chat' || i.type === 'steer');
  if (guarded.length === 0 || !agents.anyGuard()) return outcomes;
  const states = await readStates(pool, conversationRules, [...new Set(guarded.map((i) => i.conversation))]);
  const chosen = new Map([...states].map(([key, state]) => [key, state.agent]));
  const firsts = new Map<string, (typeof guarded)[number]>();
  for (const input of guarded) if (!firsts.has(inputKey(input))) firsts.set(inputKey(input), input);
  await Promise.all(
    [...firsts].map(async ([key, input]) => {
      const named = input.type === 'chat' ? input.agent : undefined;
      const agent = agents.get(chosen.get(input.conversation) ?? named ?? null);
      if (!agent) return;
      if (!chosen.get(input.conversation)) chosen.set(input.conversation, agent.name);
      const text = input.type === 'chat' ? inputText(input.messages) : input.text;
      const verdict = await withinBudget(agent, { conversation: input.conversation, kind: input.type, text, subject: input.subject });
      if ('failed' in verdict) {
        guardFailed({ conversation: input.conversation, input: input.id, agent: agent.name, reason: verdict.failed, error: verdict.error });
        const why = verdict.failed === 'timeout' ? `did not answer within ${agent.guardTimeoutMs} ms` : 'failed';
        outcomes.set(key, {
          failed: `the input guard of agent ${agent.name} ${why}, so nothing was decided; send it again with the same id, and it is guarded again`,
          attempt: randomUUID(),
        });
      } else if (verdict.refuse !== undefined) outcomes.set(key, { refuse: verdict.refuse });
    }),
  );
  return outcomes;
}

/** An agent's guard on one input, given its time budget: its verdict, or how it failed (its own error, for the log only). */
async function withinBudget(
  agent: Pick<RunnableAgent, 'guard' | 'guardTimeoutMs'>,
  input: Omit<GuardInput, 'signal'>,
): Promise<{ refuse?: string } | { failed: 'error' | 'timeout'; error: string }> {
  const budget = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const spent = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), agent.guardTimeoutMs);
  });
  try {
    const verdict = await Promise.race([agent.guard({ ...input, signal: budget.signal }), spent]);
    if (verdict !== 'timeout') return verdict ?? {};
    budget.abort(new Error(`the guard's time budget (${agent.guardTimeoutMs} ms) is spent`));
    return { failed: 'timeout', error: `no verdict within ${agent.guardTimeoutMs} ms` };
  } catch (error) {
    return { failed: 'error', error: cut(String(error instanceof Error ? (error.stack ?? error.message) : error), 2000) };
  } finally {
    clearTimeout(timer);
  }
}
