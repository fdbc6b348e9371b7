import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A transcript message a fork copied (`conversation.forked`) names the source's conversation and turn. */
export class ForkedFrom1765700000000 implements MigrationInterface {
  name = 'ForkedFrom1765700000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.transcript ADD COLUMN forked_from jsonb;
      COMMENT ON COLUMN companion.transcript.forked_from IS 'A message copied by a fork (conversation.forked): {key, turn} of the source''s conversation and turn; null for every other.'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE companion.transcript DROP COLUMN forked_from`);
  }
}
