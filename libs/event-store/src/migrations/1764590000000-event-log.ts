import { adoptHandWrittenSchema } from '@rudder/runtime';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event log as it stood when migrations moved to TypeORM (the hand-written steps 001 to
 * 005, folded into their result). A database those steps made keeps its tables as they are.
 */
export class EventLog1764590000000 implements MigrationInterface {
  name = 'EventLog1764590000000';

  async up(runner: QueryRunner): Promise<void> {
    if (await adoptHandWrittenSchema(runner, 'event_store', '005-open-work')) return;
    await runner.query(`
      -- One row per conversation: its partition (who owns it, for good) and the lock that orders
      -- its writes. head is the stream's state, opaque to the store; open_work whether the
      -- conversation has work left (a turn running, inputs waiting), as the stream's rules say
      -- at each write, so the store needs no rule of its own to find what to resume.
      CREATE TABLE event_store.conversations (
        key        text PRIMARY KEY,
        partition  integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        head       jsonb NOT NULL DEFAULT '{}',
        open_work  boolean NOT NULL DEFAULT false
      );
      CREATE INDEX conversations_with_open_work ON event_store.conversations (partition) WHERE open_work;

      -- The append-only event log. A conversation's events are ordered by position: every
      -- write locks the conversation row first, so positions grow in commit order within it.
      -- once_key makes exactly-once a database rule: an input is accepted once, a prompt
      -- starts one turn, a step's reply and a call's result are stored once, a turn ends once.
      -- Rows with published_at null are the outbox: not yet on agent.events.
      CREATE TABLE event_store.events (
        position     bigserial PRIMARY KEY,
        id           uuid NOT NULL UNIQUE,
        conversation text NOT NULL REFERENCES event_store.conversations (key),
        type         text NOT NULL,
        data         jsonb NOT NULL,
        at           timestamptz NOT NULL DEFAULT now(),
        once_key     text NOT NULL,
        published_at timestamptz,
        UNIQUE (conversation, once_key)
      );
      CREATE INDEX events_of_conversation ON event_store.events (conversation, position);
      CREATE INDEX events_to_publish ON event_store.events (position) WHERE published_at IS NULL;

      -- Fencing: a worker takes a new epoch for each partition Kafka assigns it, and every
      -- write checks it under a share lock. A worker that lost a partition (paused past its
      -- session, cut off) fails to commit anything for it: the new owner's epoch is newer.
      CREATE TABLE event_store.partition_owners (
        partition integer PRIMARY KEY,
        epoch     bigint NOT NULL,
        owner     text NOT NULL,
        taken_at  timestamptz NOT NULL DEFAULT now()
      );
    `);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE event_store.events, event_store.partition_owners, event_store.conversations');
  }
}
