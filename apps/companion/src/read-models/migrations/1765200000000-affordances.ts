import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Follow-up suggestions and recaps: made by the companion outside every turn, cached here
 * for every gateway and companion, one row per conversation and kind (`AffordanceRow`).
 */
export class Affordances1765200000000 implements MigrationInterface {
  name = 'Affordances1765200000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE companion.affordances (
        conversation text NOT NULL,
        kind text NOT NULL,
        position bigint NOT NULL,
        answer jsonb,
        claim uuid,
        claimed_until timestamptz,
        made_at timestamptz,
        PRIMARY KEY (conversation, kind)
      );
      COMMENT ON TABLE companion.affordances IS 'Follow-ups and recaps, made from the transcript up to the conversation''s last turn.ended (position); answer null while claimed or after a failure (never cached).'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE companion.affordances`);
  }
}
