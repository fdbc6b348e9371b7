import { storableJson, type ConversationEvent } from '@rudder/contracts';
import type { Pool, PoolClient } from '@rudder/runtime';
import { evolve, rowsNeeded, type Changes, type Needed, type Rows } from './evolve';

export type FoldResult = {
  /** Events folded by this call. */
  applied: number;
  /** Events skipped because their id was already applied (or repeated within the batch). */
  duplicates: number;
};

/**
 * Folds a batch of events into the projections, exactly once per event id.
 *
 * One transaction per batch, with a constant number of round trips whatever its size:
 * lock the batch's conversations, record the event ids in `applied_events` (the ids already
 * there are dropped: the relay may publish twice, Kafka may redeliver), load the rows the new
 * events touch, fold them in memory (`evolve`), write back what changed and copy the events.
 * Either all of it commits or none of it does, so a crash anywhere leaves no half-applied event.
 *
 * The per-conversation advisory locks serialize two consumers that briefly fold the same
 * partition during a rebalance, so neither overwrites rows the other changed.
 */
export async function foldEvents(pool: Pool, events: readonly ConversationEvent[]): Promise<FoldResult> {
  // An id repeated within the batch is folded once, as its first occurrence.
  const firstOf = new Map<string, ConversationEvent>();
  for (const e of events) if (!firstOf.has(e.id)) firstOf.set(e.id, e);
  const batch = [...firstOf.values()];
  if (batch.length === 0) return { applied: 0, duplicates: 0 };

  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const conversations = [...new Set(batch.map((e) => e.conversation))].sort();
    await client.query(
      `SELECT pg_advisory_xact_lock(hashtext('rudder-companion:' || key))
         FROM (SELECT key FROM unnest($1::text[]) AS key ORDER BY key) AS sorted`,
      [conversations],
    );
    const inserted = await client.query<{ id: string }>(
      `INSERT INTO companion.applied_events (id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING RETURNING id`,
      [batch.map((e) => e.id)],
    );
    const fresh = new Set(inserted.rows.map((r) => r.id));
    // Position order within a conversation is the log's order; sorting also mends a batch
    // in which the relay published a conversation's events out of order.
    const news = batch
      .filter((e) => fresh.has(e.id))
      .sort((a, b) =>
        a.conversation === b.conversation ? a.position - b.position : a.conversation < b.conversation ? -1 : 1,
      );
    if (news.length > 0) {
      const before = await loadRows(client, rowsNeeded(news));
      await writeChanges(client, evolve(before, news));
      await copyEvents(client, news);
    }
    await client.query('COMMIT');
    return { applied: news.length, duplicates: events.length - news.length };
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    // A connection that could not roll back is not given back to the pool.
    client.release(broken);
  }
}

/** One round trip: every row the batch may read, as JSON. */
async function loadRows(client: PoolClient, needed: Needed): Promise<Rows> {
  const { rows } = await client.query<{ conversations: RawConversation[]; inputs: RawInput[]; turns: RawTurn[] }>(
    `SELECT
       (SELECT coalesce(json_agg(c), '[]') FROM companion.conversations c WHERE c.key = ANY($1::text[])) AS conversations,
       (SELECT coalesce(json_agg(i), '[]') FROM companion.inputs i
          JOIN jsonb_to_recordset($2::jsonb) AS n(conversation text, id text) USING (conversation, id)) AS inputs,
       (SELECT coalesce(json_agg(t), '[]') FROM companion.turns t
          JOIN jsonb_to_recordset($3::jsonb) AS n(conversation text, id text) USING (conversation, id)) AS turns`,
    [needed.conversations, JSON.stringify(needed.inputs), JSON.stringify(needed.turns)],
  );
  const row = rows[0];
  return {
    conversations: row.conversations.map((c) => ({
      key: c.key,
      owner: c.owner,
      agent: c.agent,
      grants: c.grants ?? {},
      position: Number(c.position ?? 0),
      lastInputId: c.last_input_id,
      lastInputPosition: c.last_input_position,
      runningTurn: c.running_turn,
      runningStartedAt: iso(c.running_started_at),
    })),
    inputs: row.inputs.map((i) => ({
      conversation: i.conversation,
      id: i.id,
      kind: i.kind,
      text: i.text,
      messages: i.messages,
      subject: i.subject,
      acceptedAt: iso(i.accepted_at) ?? '',
      position: i.position,
      state: i.state,
      rejectionCode: i.rejection_code,
      rejectionMessage: i.rejection_message,
      runsNext: i.runs_next,
      steerTurn: i.steer_turn,
      steerLanded: i.steer_landed,
    })),
    turns: row.turns.map((t) => ({
      conversation: t.conversation,
      id: t.id,
      promptId: t.prompt_id,
      promptText: t.prompt_text,
      status: t.status,
      outcome: t.outcome,
      content: t.content,
      steered: t.steered,
      agent: t.agent,
      usage: t.usage,
      startedAt: iso(t.started_at) ?? '',
      endedAt: iso(t.ended_at),
    })),
  };
}

/** At most four round trips: one upsert per table that changed. */
async function writeChanges(client: PoolClient, changes: Changes): Promise<void> {
  if (changes.conversations.length > 0)
    await client.query(
      `INSERT INTO companion.conversations AS c
              (key, owner, agent, grants, position, last_input_id, last_input_position, running_turn, running_started_at)
       SELECT key, owner, agent, grants, position, "lastInputId", "lastInputPosition", "runningTurn", "runningStartedAt"
         FROM jsonb_to_recordset($1::jsonb) AS r(key text, owner text, agent text, grants jsonb, position bigint, "lastInputId" text,
              "lastInputPosition" bigint, "runningTurn" text, "runningStartedAt" timestamptz)
       ON CONFLICT (key) DO UPDATE SET
         owner = excluded.owner, agent = excluded.agent, grants = excluded.grants,
         position = GREATEST(c.position, excluded.position), last_input_id = excluded.last_input_id,
         last_input_position = excluded.last_input_position, running_turn = excluded.running_turn,
         running_started_at = excluded.running_started_at`,
      [storableJson(changes.conversations)],
    );
  if (changes.inputs.length > 0)
    await client.query(
      `INSERT INTO companion.inputs
              (conversation, id, kind, text, messages, subject, accepted_at, position, state,
               rejection_code, rejection_message, runs_next, steer_turn, steer_landed)
       SELECT conversation, id, kind, text, messages, subject, "acceptedAt", position, state,
              "rejectionCode", "rejectionMessage", "runsNext", "steerTurn", "steerLanded"
         FROM jsonb_to_recordset($1::jsonb) AS r(conversation text, id text, kind text, text text,
              messages jsonb, subject text, "acceptedAt" timestamptz, position bigint, state text,
              "rejectionCode" text, "rejectionMessage" text, "runsNext" bigint, "steerTurn" text, "steerLanded" boolean)
       ON CONFLICT (conversation, id) DO UPDATE SET
         state = excluded.state, runs_next = excluded.runs_next,
         steer_turn = excluded.steer_turn, steer_landed = excluded.steer_landed`,
      [storableJson(changes.inputs)],
    );
  if (changes.turns.length > 0)
    await client.query(
      `INSERT INTO companion.turns
              (conversation, id, prompt_id, prompt_text, status, outcome, content, steered, agent, usage, started_at, ended_at)
       SELECT conversation, id, "promptId", "promptText", status, outcome, content, steered, agent, usage, "startedAt", "endedAt"
         FROM jsonb_to_recordset($1::jsonb) AS r(conversation text, id text, "promptId" text, "promptText" text,
              status text, outcome text, content text, steered jsonb, agent text, usage jsonb, "startedAt" timestamptz, "endedAt" timestamptz)
       ON CONFLICT (conversation, id) DO UPDATE SET
         status = excluded.status, outcome = excluded.outcome, content = excluded.content,
         steered = excluded.steered, usage = excluded.usage, ended_at = excluded.ended_at`,
      [storableJson(changes.turns)],
    );
  if (changes.transcript.length > 0)
    // A message already in the transcript (the same reply of a step, stored once) is kept as it was.
    await client.query(
      `INSERT INTO companion.transcript (conversation, position, part, id, role, text, turn, steered, at)
       SELECT conversation, position, part, id, role, text, turn, steered, at
         FROM jsonb_to_recordset($1::jsonb) AS r(conversation text, position bigint, part integer, id text,
              role text, text text, turn text, steered boolean, at timestamptz)
       ON CONFLICT DO NOTHING`,
      [storableJson(changes.transcript)],
    );
}

async function copyEvents(client: PoolClient, events: readonly ConversationEvent[]): Promise<void> {
  await client.query(
    `INSERT INTO companion.events (conversation, position, id, type, data, at)
     SELECT conversation, position, id, type, data, at
       FROM jsonb_to_recordset($1::jsonb) AS r(conversation text, position bigint, id text, type text,
            data jsonb, at timestamptz)
     ON CONFLICT DO NOTHING`,
    [storableJson(events)],
  );
}

const iso = (value: string | null): string | null => (value === null ? null : new Date(value).toISOString());

type RawConversation = {
  key: string;
  owner: string | null;
  agent: string | null;
  grants: Record<string, 'read' | 'write'> | null;
  position: number | string | null;
  last_input_id: string | null;
  last_input_position: number | null;
  running_turn: string | null;
  running_started_at: string | null;
};
type RawInput = {
  conversation: string;
  id: string;
  kind: 'chat' | 'steer';
  text: string;
  messages: string[] | null;
  subject: string | null;
  accepted_at: string;
  position: number;
  state: Rows['inputs'][number]['state'];
  rejection_code: Rows['inputs'][number]['rejectionCode'];
  rejection_message: string | null;
  runs_next: number | null;
  steer_turn: string | null;
  steer_landed: boolean | null;
};
type RawTurn = {
  conversation: string;
  id: string;
  prompt_id: string;
  prompt_text: string;
  status: Rows['turns'][number]['status'];
  outcome: string | null;
  content: string;
  steered: { id: string; text: string }[];
  agent: string | null;
  usage: Rows['turns'][number]['usage'];
  started_at: string;
  ended_at: string | null;
};
