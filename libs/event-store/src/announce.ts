import type { Log, Pool } from '@rudder/runtime';

/** A notification's payload must stay under PostgreSQL's 8,000 bytes. */
const ANNOUNCE_BYTES = 7900;

/**
 * The CTE of a write's statement that announces what it inserted (`inserted`, in the write's
 * `EVENT_COLUMNS`) on the channel its parameter `$param` names (null: nothing): one `NOTIFY` per
 * conversation, sent as the write commits, of an `Announcement` — the conversation, the position
 * of the last event this write stored (`last`: the two come first, so a reader takes them without
 * parsing the rest), the position of its last event before this write (`after`: its
 * `last_position` in the statement's snapshot, which the write's own update does not change), and
 * the records of what was stored, in order.
 * Nothing for a conversation whose records would not fit one notification (their readers have
 * them from the outbox). docs/architecture.md, "The shortest path", at no statement of its own.
 */
export const announcedCte = (param: number): string => `announced AS (
  SELECT pg_notify($${param}::text, payload)
    FROM (SELECT json_build_object(
                   'conversation', i.conversation,
                   'last', max(i.position),
                   'after', coalesce((SELECT c.last_position FROM event_store.conversations c WHERE c.key = i.conversation), 0),
                   'events', json_agg(json_build_object('v', CASE WHEN i.type = 'input.rejected' THEN 2 ELSE 1 END, 'id', i.id,
                               'conversation', i.conversation, 'position', i.position, 'at', i.at, 'type', i.type, 'data', i.data) ORDER BY i.position))::text AS payload
            FROM inserted i
           WHERE $${param}::text IS NOT NULL
           GROUP BY i.conversation) p
   WHERE octet_length(payload) < ${ANNOUNCE_BYTES}
)`;

/**
 * What the write's last `SELECT` joins so that `announced` runs: an unreferenced CTE does not,
 * and a left join nothing reads is removed by the planner.
 */
export const ANNOUNCED_JOIN = 'CROSS JOIN (SELECT count(*) FROM announced) AS announced_count';

/**
 * Whether writes announce, by how full PostgreSQL's notification queue is. The queue (8 GB by
 * default) is emptied only as far as its slowest listener has read, and once it is full every
 * transaction that notifies fails at its commit: a gateway that stopped reading but kept its
 * connection (paused, say) would in the end fail the workers' writes. So writes stop announcing
 * once the queue is `high` full (readers then have every event from the outbox, as without
 * announcements) and start again below `low`; checked every `everyMs`
 * (`pg_notification_queue_usage()`), and a failed check changes nothing.
 */
export class AnnouncementGate {
  private open = true;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly announceOn: string,
    private readonly usage: () => Promise<number>,
    private readonly options: { high?: number; low?: number; everyMs?: number; log?: Log } = {},
  ) {
    this.timer = setInterval(() => void this.check(), options.everyMs ?? 10_000);
    this.timer.unref();
  }

  /** The channel to announce on now; null while the queue is too full. */
  channel(): string | null {
    return this.open ? this.announceOn : null;
  }

  /** Reads the queue's usage once and opens or closes the gate by it. */
  async check(): Promise<void> {
    const { high = 0.5, low = 0.25, log } = this.options;
    let used: number;
    try {
      used = await this.usage();
    } catch {
      return;
    }
    if (this.open && used >= high) {
      this.open = false;
      log?.warn("PostgreSQL's notification queue is filling (a listener does not read): writes stop announcing; gateways answer and stream from agent.events", { usage: used });
    } else if (!this.open && used < low) {
      this.open = true;
      log?.info("PostgreSQL's notification queue is emptying: writes announce again", { usage: used });
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** How full the database's notification queue is, 0 to 1 (`pg_notification_queue_usage()`). */
export const notificationQueueUsage = (pool: Pool) => async (): Promise<number> => {
  const { rows } = await pool.query<{ usage: number }>({ name: 'event-store-notification-queue-usage', text: 'SELECT pg_notification_queue_usage() AS usage' });
  return Number(rows[0].usage);
};
