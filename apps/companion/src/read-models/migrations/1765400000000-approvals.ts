import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tool approvals: each call that needed a person's approval and what became of it
 * (`ApprovalRow`), read by its turn (in request order) and by its id; and the transcript's
 * `approval` rows, one per decision. Nothing to backfill: a companion of an earlier version
 * folded no approval event.
 */
export class Approvals1765400000000 implements MigrationInterface {
  name = 'Approvals1765400000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE companion.approvals (
        conversation text NOT NULL,
        approval text NOT NULL,
        turn text NOT NULL,
        step integer NOT NULL,
        call_id text NOT NULL,
        tool text NOT NULL,
        arguments text NOT NULL,
        requested_at timestamptz NOT NULL,
        expires_at timestamptz,
        state text NOT NULL CHECK (state IN ('awaiting', 'approved', 'denied', 'closed')),
        reason text,
        edited_arguments text,
        subject text,
        decided_at timestamptz,
        position bigint NOT NULL,
        PRIMARY KEY (conversation, approval)
      );
      CREATE INDEX approvals_by_turn ON companion.approvals (conversation, turn, position);
      COMMENT ON TABLE companion.approvals IS 'Tool calls that needed a person''s approval: awaiting until decided (approved, denied) or closed unrun by their turn; position is their approval.requested''s.';
      ALTER TABLE companion.transcript DROP CONSTRAINT transcript_role_check,
        ADD CONSTRAINT transcript_role_check CHECK (role IN ('user', 'assistant', 'approval'))`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      DROP TABLE companion.approvals;
      DELETE FROM companion.transcript WHERE role = 'approval';
      ALTER TABLE companion.transcript DROP CONSTRAINT transcript_role_check,
        ADD CONSTRAINT transcript_role_check CHECK (role IN ('user', 'assistant'))`);
  }
}
