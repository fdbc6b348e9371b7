import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the relay published, as one watermark per conversation instead of a mark on every event:
 * `event_store.published` holds, per conversation, a position up to which every event of it is
 * on `agent.events`. The relay publishes a conversation in log order, every event, so "the
 * events after the watermark" is exactly what a mark per row said (`published_at` null), for one
 * upsert of a short row per conversation instead of rewriting each event's row and its five index
 * entries (an update of `published_at` was never HOT: the partial index of unmarked rows names
 * it). `event_store.outbox` is the view of what is left to publish.
 */
export class PublishedWatermark1764900000000 implements MigrationInterface {
  name = 'PublishedWatermark1764900000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE event_store.published (
        conversation text PRIMARY KEY REFERENCES event_store.conversations (key),
        position     bigint NOT NULL
      );
      -- Each conversation's watermark: just below its first unmarked event, else its last event.
      INSERT INTO event_store.published (conversation, position)
      SELECT c.key, coalesce((SELECT min(e.position) - 1 FROM event_store.events e WHERE e.conversation = c.key AND e.published_at IS NULL), c.last_position)
        FROM event_store.conversations c;
      DROP INDEX event_store.events_to_publish;
      ALTER TABLE event_store.events DROP COLUMN published_at;
      CREATE VIEW event_store.outbox AS
      SELECT e.*
        FROM event_store.conversations c
        LEFT JOIN event_store.published p ON p.conversation = c.key
        JOIN event_store.events e ON e.conversation = c.key AND e.position > coalesce(p.position, 0)
       WHERE c.last_position > coalesce(p.position, 0);
    `);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      DROP VIEW event_store.outbox;
      ALTER TABLE event_store.events ADD COLUMN published_at timestamptz;
      UPDATE event_store.events e SET published_at = now() FROM event_store.published p WHERE p.conversation = e.conversation AND e.position <= p.position;
      CREATE INDEX events_to_publish ON event_store.events (position) WHERE published_at IS NULL;
      DROP TABLE event_store.published;
    `);
  }
}
