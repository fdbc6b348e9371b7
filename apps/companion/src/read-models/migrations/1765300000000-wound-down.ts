import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A turn asked to wind down (an interrupt, a graceful stop) says so (`turn.ended`'s `woundDown`). */
export class WoundDown1765300000000 implements MigrationInterface {
  name = 'WoundDown1765300000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.turns ADD COLUMN wound_down boolean NOT NULL DEFAULT false;
      COMMENT ON COLUMN companion.turns.wound_down IS 'It was asked to wind down (an interrupt, a graceful stop) and ended at its next step.'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE companion.turns DROP COLUMN wound_down');
  }
}
