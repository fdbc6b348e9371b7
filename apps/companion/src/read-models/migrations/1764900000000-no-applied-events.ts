import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fold tells an event folded before by its copy in `companion.events` (keyed by its place in
 * the log), written in the same transaction; the table of every event id ever folded, which said
 * the same and grew without end, goes.
 */
export class NoAppliedEvents1764900000000 implements MigrationInterface {
  name = 'NoAppliedEvents1764900000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE IF EXISTS companion.applied_events');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE companion.applied_events (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO companion.applied_events (id) SELECT id FROM companion.events`);
  }
}
