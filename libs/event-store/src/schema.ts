import type { Migration } from '@rudder/runtime';

/** The PostgreSQL schema the turn workers own: the conversations' event log, which is also the outbox. */
export const EVENT_STORE_SCHEMA = 'event_store';

export const eventStoreMigrations: Migration[] = [
  {
    id: '001-event-log',
    sql: `
      -- One row per conversation: its partition (who owns it) and the lock that orders its writes.
      CREATE TABLE conversations (
        key        text PRIMARY KEY,
        partition  integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      -- The append-only event log. A conversation's events are ordered by position: every
      -- write locks the conversation row first, so positions grow in commit order within it.
      -- once_key makes exactly-once a database rule: an input is accepted once, a prompt
      -- starts one turn, a step's reply and a call's result are stored once, a turn ends once.
      -- Rows with published_at null are the outbox: not yet on agent.events.
      CREATE TABLE events (
        position     bigserial PRIMARY KEY,
        id           uuid NOT NULL UNIQUE,
        conversation text NOT NULL REFERENCES conversations (key),
        type         text NOT NULL,
        data         jsonb NOT NULL,
        at           timestamptz NOT NULL DEFAULT now(),
        once_key     text NOT NULL,
        published_at timestamptz,
        UNIQUE (conversation, once_key)
      );
      CREATE INDEX events_of_conversation ON events (conversation, position);
      CREATE INDEX events_to_publish ON events (position) WHERE published_at IS NULL;
    `,
  },
  {
    id: '002-conversation-head',
    sql: `
      -- The head of a conversation (see head.ts): what decisions under its lock read.
      ALTER TABLE conversations
        ADD COLUMN running_turn  text,
        ADD COLUMN steers        jsonb NOT NULL DEFAULT '[]',
        ADD COLUMN steers_landed integer NOT NULL DEFAULT 0;
    `,
  },
  {
    id: '003-partition-owners',
    sql: `
      -- Fencing: a worker takes a new epoch for each partition Kafka assigns it, and every
      -- write checks it under a share lock. A worker that lost a partition (paused past its
      -- session, cut off) fails to commit anything for it: the new owner's epoch is newer.
      CREATE TABLE partition_owners (
        partition integer PRIMARY KEY,
        epoch     bigint NOT NULL,
        owner     text NOT NULL,
        taken_at  timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    id: '004-head-as-json',
    sql: `
      -- The head grew (queue, last input, ending): one jsonb value, parsed by head.ts.
      ALTER TABLE conversations ADD COLUMN head jsonb NOT NULL DEFAULT '{}';
      UPDATE conversations
         SET head = jsonb_build_object('runningTurn', running_turn, 'steers', steers, 'steersLanded', steers_landed);
      ALTER TABLE conversations DROP COLUMN running_turn, DROP COLUMN steers, DROP COLUMN steers_landed;
    `,
  },
  {
    id: '005-open-work',
    sql: `
      -- Whether a conversation has work left (a turn running, inputs waiting), as its stream's
      -- rules say at each write, so the store needs no rule of its own to find what to resume.
      -- The head column is the stream's state, opaque to the store.
      ALTER TABLE conversations ADD COLUMN open_work boolean NOT NULL DEFAULT false;
      UPDATE conversations
         SET open_work = head->>'runningTurn' IS NOT NULL OR jsonb_array_length(COALESCE(head->'queue', '[]')) > 0;
      CREATE INDEX conversations_with_open_work ON conversations (partition) WHERE open_work;
    `,
  },
];
