import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A refused input keeps no text, only the SHA-256 of it (`input.rejected` version 2): a spammer whose inputs are refused for a full queue no longer grows the read models. The
 * rejected inputs and the copies of their refusals folded before are rewritten so (the copies
 * as version 2 data, which is what a reader upcasts version 1 to).
 */
export class RefusalDigests1765000000000 implements MigrationInterface {
  name = 'RefusalDigests1765000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.inputs ADD COLUMN digest text;
      COMMENT ON COLUMN companion.inputs.digest IS 'A rejected input''s: the SHA-256 (hex) of its joined text, which is not kept (text is empty). Null otherwise.';
      UPDATE companion.inputs SET digest = encode(sha256(convert_to(text, 'UTF8')), 'hex'), text = '' WHERE state = 'rejected';
      UPDATE companion.events
         SET data = jsonb_set(data #- '{input,text}', '{input,digest}', to_jsonb(encode(sha256(convert_to(data #>> '{input,text}', 'UTF8')), 'hex')))
       WHERE type = 'input.rejected' AND data -> 'input' ? 'text'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    // The texts are gone; a rejected input's text stays empty.
    await runner.query('ALTER TABLE companion.inputs DROP COLUMN digest');
  }
}
