import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the relay published, as one watermark per conversation instead of a mark on every event:
 * each conversation's row keeps `published_position`, a position up to which every event of it
 * is on `agent.events`. The relay publishes a conversation in log order, every event, so "the
 * events after the watermark" is exactly what a mark per row said (`published_at` null), for one
 * update of a row per conversation instead of rewriting each event's row and its five index
 * entries (an update of `published_at` was never HOT: the partial index of unmarked rows names
 * it). The conversations with events to publish are a partial index, so the relay's sweep reads
 * those, not every conversation. `event_store.outbox` is the view of what is left to publish.
 */
export class PublishedWatermark1764900000000 implements MigrationInterface {
  name = 'PublishedWatermark1764900000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE event_store.conversations ADD COLUMN published_position bigint NOT NULL DEFAULT 0;
      -- Each conversation's watermark: just below its first unmarked event, else its last event.
      UPDATE event_store.conversations c
         SET published_position = coalesce((SELECT min(e.position) - 1 FROM event_store.events e WHERE e.conversation = c.key AND e.published_at IS NULL), c.last_position);
      CREATE INDEX conversations_to_publish ON event_store.conversations (partition) WHERE last_position > published_position;
      DROP INDEX event_store.events_to_publish;
      ALTER TABLE event_store.events DROP COLUMN published_at;
      CREATE VIEW event_store.outbox AS
      SELECT e.*
        FROM event_store.conversations c
        JOIN event_store.events e ON e.conversation = c.key AND e.position > c.published_position
       WHERE c.last_position > c.published_position;
    `);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      DROP VIEW event_store.outbox;
      ALTER TABLE event_store.events ADD COLUMN published_at timestamptz;
      UPDATE event_store.events e SET published_at = now() FROM event_store.conversations c WHERE c.key = e.conversation AND e.position <= c.published_position;
      CREATE INDEX events_to_publish ON event_store.events (position) WHERE published_at IS NULL;
      DROP INDEX event_store.conversations_to_publish;
      ALTER TABLE event_store.conversations DROP COLUMN published_position;
    `);
  }
}
