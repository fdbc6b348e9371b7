/** A notification's payload must stay under PostgreSQL's 8,000 bytes. */
const ANNOUNCE_BYTES = 7900;

/**
 * The CTE of a write's statement that announces what it inserted (`inserted`, in the write's
 * `EVENT_COLUMNS`) on the channel its parameter `$param` names (null: nothing): one `NOTIFY` per
 * conversation, sent as the write commits, of an `Announcement` — the conversation, the position
 * of its last event before this write (`after`: its `last_position` in the statement's snapshot,
 * which the write's own update does not change), and the records of what was stored, in order.
 * Nothing for a conversation whose records would not fit one notification (their readers have
 * them from the outbox). docs/architecture.md, "The shortest path", at no statement of its own.
 */
export const announcedCte = (param: number): string => `announced AS (
  SELECT pg_notify($${param}::text, payload)
    FROM (SELECT json_build_object(
                   'conversation', i.conversation,
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
