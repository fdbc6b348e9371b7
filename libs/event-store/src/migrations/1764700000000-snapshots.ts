import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A snapshot of each conversation's fold (opaque to the store: the stream's own shape, tagged
 * with the version of the code that folded it) at a position of its log, so a reader starts
 * from it and reads only the events after it. One row per conversation, replaced by a newer
 * one; a cache of the log, never the truth: dropping the table loses nothing.
 */
export class Snapshots1764700000000 implements MigrationInterface {
  name = 'Snapshots1764700000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE IF NOT EXISTS event_store.snapshots (
        conversation text PRIMARY KEY REFERENCES event_store.conversations (key),
        position     bigint NOT NULL,
        version      integer NOT NULL,
        fold         jsonb NOT NULL,
        taken_at     timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE event_store.snapshots');
  }
}
