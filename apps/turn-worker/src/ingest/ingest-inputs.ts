import { randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import type { ConversationEvent, InputRecord } from '@rudder/contracts';
import { conversationRules, decideInputs, evolve, receiptKeys, startNextTurn, type ConversationState, type ForkSource, type GuardOutcome } from '@rudder/conversation';
import { appendToConversations, type Epochs, type Seen, type Written } from '@rudder/event-store';
import { isRefusedByDatabase, type Pool, type Rejected, type Sharded } from '@rudder/runtime';
import type { AgentRegistry, RunnableAgent } from '../agents/agents';
import { forkKey, readForkSources } from './fork-sources';
import { inputKey, runGuards, type GuardFailure } from './input-guards';
import { cut, ISSUE_CHARS, parseInput } from './parse-input';

/** What ingesting needs of the deployment's agents. */
export type IngestAgents = Pick<AgentRegistry, 'defaultAgent' | 'policyOf' | 'anyGuard'> & Partial<Pick<AgentRegistry, 'argumentsError' | 'historyKept'>> & {
  get(name: string | null): Pick<RunnableAgent, 'name' | 'guard' | 'guardTimeoutMs'> | undefined;
};

export type { GuardFailure, Rejected };

/** What ingesting works with, shared by every batch. */
export type InputIngestOptions = {
  /** The event store's primaries: a batch is stored on its partition's, in one transaction there. */
  pools: Sharded<Pool>;
  /** The epochs the worker holds now: what a batch stores is checked against them. */
  epochs(): Epochs;
  agents: IngestAgents;
  /**
   * What the worker holds of a conversation (its runner's fold; `ConversationRunner.seen`): a
   * batch whose conversations it holds all is decided on those and written in one statement.
   * Absent: none is held, and a batch is a transaction.
   */
  seen?: (conversation: string) => Seen<ConversationState> | undefined;
  /** A guard failed on an input of a batch of `partition` (the input is answered `guard.failed`): the worker logs and counts it. */
  guardFailed?: (failure: GuardFailure, partition: number) => void;
  /** The announcement channel, now: what is stored is announced there as it commits (null, or absent: not announced). */
  announce?: () => string | null;
};

/**
 * Ingests the batches of agent.inputs: every valid input of a partition's batch goes into its
 * conversation's log in ONE transaction (an input seen before is skipped; a steer is decided
 * against the running turn), so a long turn never holds up the inputs of other conversations. A
 * conversation with no turn running starts the next one in that same transaction
 * (`turn.started`, `input.delivered`); the caller's poke makes its runner read and run it.
 *
 * A fork's source (another conversation) is read from the event store before the transaction,
 * with the guards, on the source's own primary: its decision, under the new conversation's
 * lock, sees it as it was then, and the copy goes into the new conversation's log, on its primary.
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
 * With several primaries, so is a record whose key belongs to another primary (`shardOfKey`):
 * it goes to its key's partition, where the conversation is, or is first seen.
 */
export class InputIngest {
  constructor(private readonly options: InputIngestOptions) {}

  /**
   * Ingests one batch of `partition`. Returns what was newly stored and what could not be
   * ingested; the caller dead-letters the rejected records before it commits the offsets.
   */
  async batch(partition: number, messages: readonly KafkaMessage[]) {
    const { pools, agents } = this.options;
    const pool = pools.forPartition(partition);
    const epochs = this.options.epochs();
    const announce = this.options.announce?.() ?? null;
    const readable: { message: KafkaMessage; input: InputRecord }[] = [];
    const rejected: Rejected[] = [];
    // With several primaries a conversation lives on its key's primary, whatever partition a
    // producer with another partitioner sent it to: a record whose key is another primary's is
    // sent to its key's partition, unread here (this primary would not know the conversation).
    const otherPrimary: { message: KafkaMessage; partition: number }[] = [];
    for (const message of messages) {
      const read = parseInput(message);
      if ('reason' in read) rejected.push({ message, reason: read.reason });
      else if (pools.shardOfKey(read.input.conversation) !== pools.shardOf(partition)) otherPrimary.push({ message, partition: pools.partitionOfKey(read.input.conversation) });
      else readable.push({ message, input: read.input });
    }
    const guarded = await runGuards(pool, readable.map((r) => r.input), agents, (failure) => this.options.guardFailed?.(failure, partition));
    const sources = await readForkSources(pools, readable.map((r) => r.input), agents.historyKept?.() ?? null);
    const ingest = (inputs: readonly InputRecord[]) => this.appendInputs(partition, epochs, inputs, { guarded, sources }, announce);
    const done = (stored: ConversationEvent[], elsewhere: ReadonlyMap<string, number>, written?: Pick<Written, 'before' | 'trace'>) => ({
      stored,
      // For the outbox relay: with `before` it publishes these as they are (record by record, it reads them back).
      before: written?.before ?? new Map<string, number>(),
      trace: written?.trace ?? null,
      conversations: [...new Set(readable.map((r) => r.input.conversation))].filter((c) => !elsewhere.has(c)),
      news: newsOf(stored, written?.before),
      rejected,
      misrouted: [
        ...otherPrimary,
        ...readable.flatMap(({ message, input }) => {
          const to = elsewhere.get(input.conversation);
          return to === undefined ? [] : [{ message, partition: to }];
        }),
      ],
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

  private appendInputs(
    partition: number,
    epochs: Epochs,
    inputs: readonly InputRecord[],
    read: { guarded: ReadonlyMap<string, GuardOutcome>; sources: ReadonlyMap<string, ForkSource> },
    announce: string | null,
  ) {
    const { pools, agents, seen = () => undefined } = this.options;
    const byConversation = new Map<string, InputRecord[]>();
    for (const input of inputs) byConversation.set(input.conversation, [...(byConversation.get(input.conversation) ?? []), input]);
    return appendToConversations(
      pools.forPartition(partition),
      conversationRules,
      partition,
      epochs,
      [...byConversation].map(([conversation, of]) => ({ conversation, probe: of.flatMap(receiptKeys) })),
      (conversation, state, alreadyStored) => {
        const now = new Date();
        const decided = decideInputs(
          state,
          byConversation.get(conversation)!,
          alreadyStored,
          agents,
          now,
          (input) => read.guarded.get(inputKey(input)),
          (input) => read.sources.get(forkKey(input)),
        );
        // An idle conversation's next turn starts in the same transaction: one commit less per turn.
        return [...decided, ...startNextTurn(decided.reduce(evolve, state), randomUUID(), now)];
      },
      seen,
      { announce },
    );
  }
}

/** What a batch stored, and what the caller sends elsewhere. */
export type Ingested = Awaited<ReturnType<InputIngest['batch']>>;

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
