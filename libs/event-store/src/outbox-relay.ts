import type { ConversationEvent } from '@rudder/contracts';
import type { Log, Pool } from '@rudder/runtime';
import { EVENT_COLUMNS, toConversationEvent, type EventRow } from './stored-event';

export type OutboxRelayOptions = {
  pool: Pool;
  /**
   * Sends events to the bus in the order given; resolves once the bus has them. `traces[i]`:
   * the W3C traceparent stored with `events[i]` (null without), for the publication to join it.
   */
  publish(events: readonly ConversationEvent[], traces: readonly (string | null)[]): Promise<void>;
  /** The partitions whose conversations this process owns; a sweep publishes only those. */
  ownedPartitions(): readonly number[];
  /** Called between publishing and marking (the crash tests kill the process here). */
  afterPublish?: () => void;
  log: Log;
  retryMs?: number;
  batchSize?: number;
  /** How often the table is swept even if nothing was enqueued (commits whose enqueue never came). */
  sweepMs?: number;
};

export type OutboxRelay = {
  /** Events just committed: the relay publishes what the table holds unpublished, these among them. */
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
 * It always publishes from the table, never from memory: every publication is a sweep of the
 * owned partitions' unmarked rows in position order, on one chain. Per conversation that is
 * log order, every event: a conversation's writes hold its row lock until they commit, so a
 * later position of a conversation is never visible before an earlier one, and a sweep
 * publishes all of a conversation's committed unmarked rows in order. Publishing from memory
 * in `enqueue` order was not (#9 hole 3): a commit whose enqueue came late (a slow dead-letter
 * send between the two) or never (a COMMIT whose acknowledgement was lost) let newer events
 * out first and left the others behind. `enqueue` only asks for a sweep (coalesced: one
 * waiting is enough) of the conversations it names, and a sweep of the whole table runs every
 * `sweepMs` (and after an assignment, a failure, a start) for commits nobody enqueued.
 *
 * A sweep of a few conversations reads each after the highest position this relay published of
 * it (0 when it published none). That skips nothing: a conversation's positions are visible in
 * their order, and each read takes every visible unmarked row of the conversation in position
 * order, so when the relay published position p of a conversation, every earlier one of it was
 * visible to that read or an earlier one, and published by it. The mark is per conversation,
 * never across conversations: rows of other conversations may still be committing below it.
 *
 * Marking what was published rides on the next sweep's read when that sweep is already
 * waiting (commits close together, under load), else it is a statement of its own at once.
 *
 * A crash between publishing and marking publishes again; consumers deduplicate by event id.
 * The relay never skips a row that is still committing: the whole table's sweep keeps no
 * high-water mark, it asks for unmarked rows.
 */
/** Conversations whose last published position a relay keeps; past it, the oldest tenth are forgotten (read from the start again, once). */
const PUBLISHED_KEPT = 50_000;

export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { pool, publish, log } = options;
  const retryMs = options.retryMs ?? 1000;
  const batchSize = options.batchSize ?? 500;
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  /** A sweep is on the chain and has not started yet: what is committed now, it will see. */
  let sweepWaiting = false;
  /** The waiting sweep reads the owned partitions' whole outbox (else only the conversations in `due`). */
  let wholeTable = true;
  /** Conversations whose commits were enqueued since the last read began. */
  const due = new Set<string>();
  /** Per conversation, the highest position this relay published: every earlier one of it is published (see above). */
  const published = new Map<string, number>();
  /** Positions published and not marked yet: the next sweep's read marks them, or `mark` does. */
  let unmarked: number[] = [];

  const mark = async () => {
    if (unmarked.length === 0) return;
    await pool.query({ name: 'event-store-outbox-mark', text: 'UPDATE event_store.events SET published_at = now() WHERE position = ANY($1::bigint[])', values: [unmarked] });
    unmarked = [];
  };

  /**
   * One statement reads the next rows to publish and marks those published before (they are
   * left out of the read: its snapshot still shows them unmarked). Under load, when the next
   * sweep is already waiting, marking costs no round trip of its own.
   *
   * The read is of the owned partitions' whole outbox (the partial index of unmarked rows, which
   * holds every row marked since the table's last vacuum, so its cost grows with them), or, for a
   * sweep asked by `enqueue`, of the enqueued conversations' rows after what this relay published
   * of each (their `(conversation, position)` index, from there on: only what is new).
   */
  const sweepTable = async () => {
    const conversations = wholeTable ? null : [...due];
    wholeTable = false;
    due.clear();
    for (;;) {
      const rows = await readUnpublished(conversations);
      unmarked = [];
      if (rows.length === 0) return;
      const events = rows.map(toConversationEvent);
      await publish(events, rows.map((r) => r.trace));
      options.afterPublish?.();
      unmarked = events.map((e) => e.position);
      for (const e of events) published.set(e.conversation, Math.max(e.position, published.get(e.conversation) ?? 0));
      if (published.size > PUBLISHED_KEPT) for (const key of [...published.keys()].slice(0, published.size / 10)) published.delete(key);
      if (rows.length < batchSize) {
        // Nothing is known to follow: mark now, unless the sweep already waiting will.
        if (!sweepWaiting) await mark();
        return;
      }
    }
  };

  const readUnpublished = async (conversations: readonly string[] | null) => {
    const columns = EVENT_COLUMNS.split(', ').map((c) => 'e.' + c).join(', ');
    const marked = 'WITH marked AS (UPDATE event_store.events SET published_at = now() WHERE position = ANY($3::bigint[]))';
    const { rows } =
      conversations === null
        ? await pool.query<EventRow>({
            name: 'event-store-outbox-sweep',
            text: `${marked}
             SELECT ${columns}
               FROM event_store.events e JOIN event_store.conversations c ON c.key = e.conversation
              WHERE e.published_at IS NULL AND c.partition = ANY($1::int[]) AND e.position <> ALL($3::bigint[])
              ORDER BY e.position LIMIT $2`,
            values: [options.ownedPartitions(), batchSize, unmarked],
          })
        : // Planned at each call (no name: a generic plan of it read the conversations' whole
          // history, growing with it), each conversation read by a range of its (conversation,
          // position) index from its mark; OFFSET 0 keeps the filter on published_at out of that
          // scan, or the planner would intersect it with the partial index of unmarked rows and
          // read every dead entry in it (its estimate of that index's size is the last vacuum's).
          await pool.query<EventRow>({
            text: `${marked}
             SELECT ${columns}
               FROM unnest($4::text[], $5::bigint[]) AS w(conversation, after)
               JOIN event_store.conversations c ON c.key = w.conversation AND c.partition = ANY($1::int[])
               CROSS JOIN LATERAL (
                 SELECT ${columns}, e.published_at FROM event_store.events e
                  WHERE e.conversation = w.conversation AND e.position > w.after OFFSET 0) e
              WHERE e.published_at IS NULL AND e.position <> ALL($3::bigint[])
              ORDER BY e.position LIMIT $2`,
            values: [options.ownedPartitions(), batchSize, unmarked, conversations, conversations.map((c) => published.get(c) ?? 0)],
          });
    return rows;
  };

  /** A sweep on the chain: of the whole table, or (`only`) of these conversations, unless a sweep of the whole table waits already. */
  const sweep = (only?: Iterable<string>) => {
    if (only === undefined) wholeTable = true;
    else for (const conversation of only) due.add(conversation);
    if (stopped || sweepWaiting) return;
    sweepWaiting = true;
    chain = chain
      .then(() => {
        sweepWaiting = false;
        return sweepTable();
      })
      .catch((error: unknown) => {
        // What this sweep was to read is read again, with the rest of the table.
        wholeTable = true;
        log.warn('outbox relay fell behind; will publish from the table', { error: String(error) });
        if (!stopped && !retry) {
          retry = setTimeout(() => {
            retry = undefined;
            sweep();
          }, retryMs);
        }
      });
  };
  const backstop = setInterval(() => sweep(), options.sweepMs ?? 2000);
  backstop.unref();
  sweep(); // a new process first publishes what a previous one may have left

  return {
    enqueue: (events) => {
      if (events.length > 0) sweep(new Set(events.map((e) => e.conversation)));
    },
    sweep: () => sweep(),
    idle: () => chain,
    async stop() {
      stopped = true;
      clearInterval(backstop);
      clearTimeout(retry);
      await chain;
      await mark().catch(() => undefined); // what stays unmarked is published again by the next owner
    },
  };
}
