import { randomUUID } from 'node:crypto';
import { storableJson, type DomainEvent } from '@rudder/contracts';
import { EVENT_COLUMNS } from './stored-event';
import type { StreamRules } from './writes';

/**
 * A write's parameters, column by column as its statement unnests them: the events in order
 * (ids, conversations, types, data, once keys), then the new head of each conversation they
 * change (keys, states, whether work is left), and each event's writer's trace (`traces`, for
 * a statement whose writes come from several writers).
 */
export function writeColumns<S>(rules: StreamRules<S>, writes: readonly { conversation: string; state: S; events: DomainEvent[]; trace?: string | null }[]) {
  const events = writes.flatMap((w) => w.events.map((event) => ({ conversation: w.conversation, event, trace: w.trace ?? null })));
  const heads = writes
    .filter((w) => w.events.length > 0)
    .map((w) => {
      const state = w.events.reduce(rules.evolve, w.state);
      return { key: w.conversation, state: storableJson(state), open: rules.hasOpenWork(state) };
    });
  return {
    events: [
      events.map(() => randomUUID()),
      events.map((e) => e.conversation),
      events.map((e) => e.event.type),
      events.map((e) => storableJson(e.event.data)),
      events.map((e) => rules.onceKey(e.event)),
    ],
    heads: [heads.map((h) => h.key), heads.map((h) => h.state), heads.map((h) => h.open)],
    /** Each event's writer's trace (null when tracing is off). */
    traces: events.map((e) => e.trace),
  };
}

/**
 * The CTE `inserted` of a one-statement write: `writeColumns`' events, in their order, from the
 * parameter `$first` on (its five event arrays), each with its writer's trace (the array at
 * `$traces`), stamped with the statement's time, inserted only when the SQL condition `when`
 * holds; returning `EVENT_COLUMNS`.
 */
export const insertedCte = (first: number, traces: number, when: string): string => `inserted AS (
  INSERT INTO event_store.events (id, conversation, type, data, once_key, trace, at)
  SELECT e.id, e.conversation, e.type, e.data, e.once_key, e.trace, statement_timestamp()
    FROM unnest($${first}::uuid[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::jsonb[], $${first + 4}::text[], $${traces}::text[])
         WITH ORDINALITY AS e(id, conversation, type, data, once_key, trace, n)
   WHERE ${when}
   ORDER BY e.n
  RETURNING ${EVENT_COLUMNS}
)`;
