import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A turn rolled back (`turns.rolledBack`, or stopped by a chat's `onBusy: "rollback"`) says so; the transcript hides its rows unless asked. */
export class RolledBack1765500000000 implements MigrationInterface {
  name = 'RolledBack1765500000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.turns ADD COLUMN rolled_back boolean NOT NULL DEFAULT false;
      COMMENT ON COLUMN companion.turns.rolled_back IS 'It was rolled back (turns.rolledBack, or a chat''s onBusy rollback): left out of later model requests, its transcript rows hidden unless asked for.'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE companion.turns DROP COLUMN rolled_back');
  }
}
