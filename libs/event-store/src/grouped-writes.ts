import type { ConversationEvent } from '@rudder/contracts';
import { grouped, type Pool } from '@rudder/runtime';
import { appendIfUnchanged, type UnchangedWrite } from './append-if-unchanged';
import type { Epochs } from './fencing';
import type { StreamRules } from './writes';

/**
 * How `appendToConversation` makes its one-statement write: answers what it stored, or null
 * when it wrote nothing (the caller then decides again in a transaction, on what is stored).
 */
export type UnchangedWriter<S> = (write: UnchangedWrite<S>, epochs: Epochs) => Promise<ConversationEvent[] | null>;

/**
 * What a writer's statements do beside writing: `announce` answers, at each write, the channel
 * what it stores is announced on as it commits (`announcedCte`; null: none) — for example
 * `AnnouncementGate.channel`, which closes while PostgreSQL's notification queue is too full.
 */
export type WriterOptions = { announce?: () => string | null };

const channelOf = ({ announce }: WriterOptions): string | null => announce?.() ?? null;

/** Each write in a statement of its own. */
export const singleWrites =
  <S>(pool: Pool, rules: StreamRules<S>, options: WriterOptions = {}): UnchangedWriter<S> =>
  (write, epochs) =>
    appendIfUnchanged(pool, rules, [write], epochs, { announce: channelOf(options) });

/**
 * At most this many writes share a statement (`groupedWrites`). One conversation that moved
 * sends all of a statement's writes to statements of their own, so a statement of thousands
 * would cost a worker holding thousands of busy conversations a storm of them.
 */
export const WRITES_PER_STATEMENT = 32;

/**
 * Group commit of one-statement writes (a worker's turns' steps): the writes handed over
 * while a statement is in flight go together into the next one, one statement and one commit
 * for all of them (`grouped`: the first after a quiet spell waits one turn of the event loop,
 * no timer). That statement writes all or nothing: when any one conversation is not where its
 * writer saw it, its epoch moved, or it is not on an owned partition, nothing is written and
 * each write goes again in a statement of its own, which answers for it alone (its events, null
 * or its error). Only writes of different conversations under the same epochs (the worker's
 * map of the moment; a rebalance replaces it) share a statement, `WRITES_PER_STATEMENT` at most.
 */
export function groupedWrites<S>(pool: Pool, rules: StreamRules<S>, options: WriterOptions = {}): UnchangedWriter<S> {
  type Item = { write: UnchangedWrite<S>; epochs: Epochs };
  type Outcome = { stored: ConversationEvent[] | null } | { error: unknown };
  const alone = ({ write, epochs }: Item): Promise<Outcome> =>
    appendIfUnchanged(pool, rules, [write], epochs, { announce: channelOf(options) }).then(
      (stored) => ({ stored }),
      (error: unknown) => ({ error }),
    );
  const write = grouped<Item, Outcome>(async (items) => {
    const [first] = items;
    const distinct = new Set(items.map((i) => i.write.conversation)).size === items.length;
    if (items.length > 1 && distinct && items.every((i) => i.epochs === first.epochs)) {
      const stored = await appendIfUnchanged(
        pool,
        rules,
        items.map((i) => i.write),
        first.epochs,
        { announce: channelOf(options) },
      ).catch(() => null); // each write alone says what was wrong with it
      if (stored) return items.map((i) => ({ stored: stored.filter((e) => e.conversation === i.write.conversation) }));
    }
    if (distinct) return Promise.all(items.map(alone));
    // Two writes of one conversation: the second follows the first.
    const outcomes: Outcome[] = [];
    for (const item of items) outcomes.push(await alone(item));
    return outcomes;
  }, { most: WRITES_PER_STATEMENT, size: () => 1 });
  return async (unchanged, epochs) => {
    const outcome = await write({ write: unchanged, epochs });
    if ('error' in outcome) throw outcome.error;
    return outcome.stored;
  };
}
