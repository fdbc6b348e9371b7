import type { ConversationEvent } from '@rudder/contracts';
import type { Log, Pool } from '@rudder/runtime';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

export type OutboxRelayOptions = {
  pool: Pool;
  /** Sends events to the bus in the order given; resolves once the bus has them. */
  publish(events: readonly ConversationEvent[]): Promise<void>;
  /** The partitions whose conversations this process owns; a sweep publishes only those. */
  ownedPartitions(): readonly number[];
  /** Called between publishing and marking (the crash tests kill the process here). */
  afterPublish?: () => void;
  log: Log;
  retryMs?: number;
  batchSize?: number;
};

export type OutboxRelay = {
  /** Events just committed: published right away, in order, then marked published. */
  enqueue(events: readonly ConversationEvent[]): void;
  /** Publishes every unpublished event of the owned partitions (after an assignment, say). */
  sweep(): void;
  /** Resolves when everything handed over so far has been published and marked, or has failed. */
  idle(): Promise<void>;
  stop(): Promise<void>;
};

/**
 * The relay of the transactional outbox: the event log's rows with `published_at` null.
 *
 * Order per conversation is kept because every publication runs on one chain, and while
 * anything failed to publish ("behind"), the chain publishes from the table in position
 * order instead of from memory, until the table has nothing left. A crash between publishing
 * and marking publishes again; consumers deduplicate by event id. The relay never skips a row
 * that is still committing: it does not keep a high-water mark, it asks for unmarked rows.
 */
export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { pool, publish, log } = options;
  const retryMs = options.retryMs ?? 1000;
  const batchSize = options.batchSize ?? 500;
  let chain: Promise<void> = Promise.resolve();
  let behind = true; // a new process first sweeps what a previous one may have left
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const publishAndMark = async (events: readonly ConversationEvent[]) => {
    if (events.length === 0) return;
    await publish(events);
    options.afterPublish?.();
    await pool.query('UPDATE event_store.events SET published_at = now() WHERE position = ANY($1::bigint[])', [
      events.map((e) => e.position),
    ]);
  };

  const sweepTable = async () => {
    for (;;) {
      const { rows } = await pool.query<EventRow>(
        `SELECT ${EVENT_COLUMNS.split(', ').map((c) => 'e.' + c).join(', ')}
           FROM event_store.events e JOIN event_store.conversations c ON c.key = e.conversation
          WHERE e.published_at IS NULL AND c.partition = ANY($1::int[])
          ORDER BY e.position LIMIT $2`,
        [options.ownedPartitions(), batchSize],
      );
      await publishAndMark(rows.map(toConversationEvent));
      if (rows.length < batchSize) break;
    }
    behind = false;
  };

  const run = (job: () => Promise<void>) => {
    chain = chain.then(job).catch((error: unknown) => {
      behind = true;
      log.warn('outbox relay fell behind; will publish from the table', { error: String(error) });
      if (!stopped && !retry) {
        retry = setTimeout(() => {
          retry = undefined;
          run(sweepTable);
        }, retryMs);
      }
    });
  };

  return {
    enqueue: (events) => run(() => (behind ? sweepTable() : publishAndMark(events))),
    sweep: () => run(sweepTable),
    idle: () => chain,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await chain;
    },
  };
}
