/** A notification's payload must stay under PostgreSQL's 8,000 bytes. */
const ANNOUNCE_BYTES = 7900;

/**
 * The CTE of a write's statement that announces what it inserted (`inserted`, in the write's
 * `EVENT_COLUMNS`) on the channel its parameter `$param` names (null: nothing): one `NOTIFY` of
 * the JSON array of their records, sent as the write commits, nothing when they would not fit
 * one notification (their readers have them from the outbox). The decision channel
 * (docs/architecture.md, "The decision's shortest path"), at no statement of its own.
 */
export const announcedCte = (param: number): string => `announced AS (
  SELECT pg_notify($${param}::text, payload)
    FROM (SELECT json_agg(json_build_object('v', CASE WHEN type = 'input.rejected' THEN 2 ELSE 1 END, 'id', id,
                 'conversation', conversation, 'position', position, 'at', at, 'type', type, 'data', data) ORDER BY position)::text AS payload
            FROM inserted) p
   WHERE $${param}::text IS NOT NULL AND payload IS NOT NULL AND octet_length(payload) < ${ANNOUNCE_BYTES}
)`;

/**
 * What the write's last `SELECT` joins so that `announced` runs: an unreferenced CTE does not,
 * and a left join nothing reads is removed by the planner.
 */
export const ANNOUNCED_JOIN = 'CROSS JOIN (SELECT count(*) FROM announced) AS announced_count';
