import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A follow-up collapsed by a queue policy (`inputs.collapsed`) is `collapsed`, and names the follow-up whose turn answers it. */
export class Collapsed1765600000000 implements MigrationInterface {
  name = 'Collapsed1765600000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.inputs DROP CONSTRAINT inputs_state_check;
      ALTER TABLE companion.inputs ADD CONSTRAINT inputs_state_check
        CHECK (state IN ('pending', 'delivered', 'retracted', 'discarded', 'rejected', 'collapsed'));
      ALTER TABLE companion.inputs ADD COLUMN collapsed_into text;
      COMMENT ON COLUMN companion.inputs.collapsed_into IS 'The follow-up it was collapsed into (inputs.collapsed): that one''s turn answers it; null unless state is collapsed.'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.inputs DROP COLUMN collapsed_into;
      ALTER TABLE companion.inputs DROP CONSTRAINT inputs_state_check;
      ALTER TABLE companion.inputs ADD CONSTRAINT inputs_state_check CHECK (state IN ('pending', 'delivered', 'retracted', 'discarded', 'rejected'))`);
  }
}
