import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each conversation's row keeps the position of its last event, written by the statement that
 * appends it: a writer that holds the conversation as of that position can append in one
 * statement that checks nothing was written since (append.ts, the one-statement path).
 */
export class LastPosition1764800000000 implements MigrationInterface {
  name = 'LastPosition1764800000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE event_store.conversations ADD COLUMN IF NOT EXISTS last_position bigint NOT NULL DEFAULT 0;
      UPDATE event_store.conversations c
         SET last_position = e.last
        FROM (SELECT conversation, max(position) AS last FROM event_store.events GROUP BY conversation) e
       WHERE e.conversation = c.key`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE event_store.conversations DROP COLUMN last_position');
  }
}
