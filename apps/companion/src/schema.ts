import type { Migration } from '@rudder/runtime';

/** The PostgreSQL schema the companion owns; nothing else writes to it. */
export const SCHEMA = 'companion';

/**
 * The read models, folded from `agent.events`. Every table is keyed by conversation first:
 * input ids are the clients' idempotency keys, so two conversations may use the same one,
 * and every query is scoped to the conversation the gateway authorized.
 * `migrate` runs each migration with `search_path` set to the schema.
 */
export const migrations: readonly Migration[] = [
  {
    id: '001-projections',
    sql: `
      -- Ids of the events folded so far: an event already here changes nothing when it comes again.
      CREATE TABLE applied_events (
        id text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE conversations (
        key text PRIMARY KEY,
        -- The subject of the first accepted input; null until one is accepted.
        owner text,
        last_input_id text,
        last_input_position bigint,
        -- Null when no turn is running.
        running_turn text,
        running_started_at timestamptz
      );

      CREATE TABLE inputs (
        conversation text NOT NULL,
        id text NOT NULL,
        kind text NOT NULL,
        text text NOT NULL,
        messages jsonb NOT NULL,
        subject text NOT NULL,
        accepted_at timestamptz NOT NULL,
        position bigint NOT NULL,
        -- False while pending; true once a turn started for it (or took it).
        delivered boolean NOT NULL DEFAULT false,
        PRIMARY KEY (conversation, id)
      );
      CREATE INDEX inputs_pending ON inputs (conversation, position) WHERE NOT delivered;

      CREATE TABLE turns (
        conversation text NOT NULL,
        id text NOT NULL,
        prompt_id text NOT NULL,
        prompt_text text NOT NULL,
        -- 'running' until turn.ended, then how it ended.
        status text NOT NULL,
        outcome text,
        content text NOT NULL,
        steered jsonb NOT NULL DEFAULT '[]',
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        PRIMARY KEY (conversation, id)
      );
      CREATE INDEX turns_by_prompt ON turns (conversation, prompt_id);

      -- Delivered messages, oldest first by (position, part): the position of the event that
      -- delivered them and the index of the row within that event. That pair is the cursor.
      CREATE TABLE transcript (
        conversation text NOT NULL,
        position bigint NOT NULL,
        part integer NOT NULL,
        id text NOT NULL,
        role text NOT NULL CHECK (role IN ('user', 'assistant')),
        text text NOT NULL,
        turn text,
        steered boolean NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (conversation, position, part),
        UNIQUE (conversation, id)
      );

      -- A copy of every event, for SSE replay after Last-Event-ID.
      CREATE TABLE events (
        conversation text NOT NULL,
        position bigint NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        data jsonb NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (conversation, position)
      );
    `,
  },
  {
    id: '002-steering',
    sql: `
      -- The worker's decision on a steer (steer.accepted): null until it is made, and for chats.
      -- steer_landed = true: steer_turn will take it; false: it is answered as a turn of its own.
      ALTER TABLE inputs ADD COLUMN steer_turn text, ADD COLUMN steer_landed boolean;
    `,
  },
  {
    id: '003-queue-controls',
    sql: `
      -- Where an input stands, instead of delivered or not: pending until delivered, retracted or
      -- discarded; rejected inputs (input.rejected) were refused and never pending.
      ALTER TABLE inputs
        ADD COLUMN state text NOT NULL DEFAULT 'pending'
          CHECK (state IN ('pending', 'delivered', 'retracted', 'discarded', 'rejected')),
        -- Why it was rejected (input.rejected's code and message); null otherwise.
        ADD COLUMN rejection_code text,
        ADD COLUMN rejection_message text,
        -- The position of the stop.requested by which this pending chat interrupted or rolled back
        -- the running turn: it runs next (the latest such chat first). Null otherwise.
        ADD COLUMN runs_next bigint;
      UPDATE inputs SET state = 'delivered' WHERE delivered;
      DROP INDEX inputs_pending;
      ALTER TABLE inputs DROP COLUMN delivered;
      -- A rejection names only the input's (joined) text: no messages, no subject.
      ALTER TABLE inputs ALTER COLUMN messages DROP NOT NULL, ALTER COLUMN subject DROP NOT NULL;
      CREATE INDEX inputs_pending ON inputs (conversation, position) WHERE state = 'pending';
    `,
  },
  {
    id: '004-agents',
    sql: `
      -- The agent that answers a conversation (conversation.opened), and each turn's, with the
      -- token usage of its model replies summed.
      ALTER TABLE conversations ADD COLUMN agent text;
      ALTER TABLE turns ADD COLUMN agent text, ADD COLUMN usage jsonb;
    `,
  },
  {
    id: '005-grants',
    sql: `
      -- Access the owner gave other subjects (access.granted): subject -> 'read' | 'write'.
      ALTER TABLE conversations ADD COLUMN grants jsonb NOT NULL DEFAULT '{}';
    `,
  },
  {
    id: '006-read-position',
    sql: `
      -- The position of the last event folded per conversation: a read that must reflect a
      -- write (Rudder-Min-Position) waits until this reaches the write's position.
      ALTER TABLE conversations ADD COLUMN position bigint NOT NULL DEFAULT 0;
    `,
  },
];
