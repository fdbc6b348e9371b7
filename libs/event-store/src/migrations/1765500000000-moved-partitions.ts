import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * For growing from N to M primaries (scripts/grow-primaries.ts; docs/operations.md, "Growing
 * from N to M primaries"), which moves whole partitions, their conversations with their
 * positions, from one primary to another.
 *
 * Each primary numbers its events with a sequence of its own, so two primaries hand out the
 * same positions; an event copied from another primary keeps its position (clients resume from
 * it), which may be one the destination's own conversations already used. A position is
 * unique within its conversation, which is all the code asks of it (every read, the outbox
 * and the read models go by conversation, then position): the key becomes (conversation,
 * position), which is also the index every read of a conversation's log ranges over.
 *
 * A partition moved off this primary is marked so on its owner row (`moved_to`: the shard, in
 * the new map, that holds it now); taking its epoch is refused from then on (fencing.ts), so a
 * worker still started with the old map can never write it here again.
 */
export class MovedPartitions1765500000000 implements MigrationInterface {
  name = 'MovedPartitions1765500000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE event_store.events DROP CONSTRAINT events_pkey;
      ALTER TABLE event_store.events ADD CONSTRAINT events_pkey PRIMARY KEY (conversation, position);
      DROP INDEX event_store.events_of_conversation;
      ALTER TABLE event_store.partition_owners ADD COLUMN moved_to integer;
      COMMENT ON COLUMN event_store.partition_owners.moved_to IS 'Null while the partition lives here; else the shard (in the map after growing) it was moved to: no epoch of it is taken here again.'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE event_store.partition_owners DROP COLUMN moved_to;
      CREATE INDEX events_of_conversation ON event_store.events (conversation, position);
      ALTER TABLE event_store.events DROP CONSTRAINT events_pkey;
      ALTER TABLE event_store.events ADD CONSTRAINT events_pkey PRIMARY KEY (position)`);
  }
}
